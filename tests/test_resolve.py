"""The one way memcap resolves ``generator``, ``dtype`` and ``device`` (memcap/_resolve.py)."""
import re
from pathlib import Path

import pytest
import torch

from memcap import _resolve


def test_generator_none_is_a_fresh_generator_seeded_with_the_default_seed():
    a, b = _resolve.generator(None), _resolve.generator(None)
    assert a is not b and torch.equal(torch.rand(3, generator=a), torch.rand(3, generator=b))
    assert torch.equal(torch.rand(3, generator=_resolve.generator(None)),
                       torch.rand(3, generator=torch.Generator().manual_seed(_resolve.DEFAULT_SEED)))
    g = torch.Generator()
    assert _resolve.generator(g) is g
    with pytest.raises(TypeError, match="generator must be a torch.Generator or None, got int"):
        _resolve.generator(0)


def test_dtype_and_device():
    assert _resolve.float_dtype(None, torch.float64) == torch.float64
    assert _resolve.float_dtype(torch.float32, torch.float64) == torch.float32
    with pytest.raises(TypeError, match="dtype must be torch.float32 or torch.float64, got torch.float16"):
        _resolve.float_dtype(torch.float16, torch.float64)
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype"):
        _resolve.float_dtype(torch.int64, torch.float64)
    assert _resolve.device("cpu") == torch.device("cpu")
    on_meta = torch.ones(1, device="meta")                    # an optional tensor input sets the device ...
    assert _resolve.device(None, like=on_meta) == torch.device("meta")
    assert _resolve.device("cpu", like=on_meta) == torch.device("cpu")   # ... unless one is asked for
    assert _resolve.device(None, like=[1.0]) == _resolve.device(None)   # an array has no device
    with pytest.raises(TypeError, match="device must be a str, a torch.device or None"):
        _resolve.device(0)


def test_draws_do_not_depend_on_the_target_dtype():
    a = _resolve.randn((4,), torch.Generator().manual_seed(1), torch.float64, torch.device("cpu"))
    b = _resolve.randn((4,), torch.Generator().manual_seed(1), torch.float32, torch.device("cpu"))
    assert torch.equal(a.float(), b)


def test_integer_draws_are_made_on_the_generator_device_then_moved():
    cpu = torch.device("cpu")
    a = _resolve.randint(7, (3, 4), torch.Generator().manual_seed(2), cpu)
    assert a.dtype == torch.int64 and a.shape == (3, 4) and int(a.min()) >= 0 and int(a.max()) < 7
    assert torch.equal(a, torch.randint(7, (3, 4), generator=torch.Generator().manual_seed(2)))
    p = _resolve.randperm(9, torch.Generator().manual_seed(2), cpu)
    assert sorted(p.tolist()) == list(range(9))
    assert torch.equal(p, torch.randperm(9, generator=torch.Generator().manual_seed(2)))


# Draws written with torch's samplers directly, outside _resolve, in the science modules; each needs a reason.
INLINE_DRAWS = {
    "memcap/linalg.py": 1,  # float32 sort keys of random subsets (a random order needs no float64)
    "memcap/doctor.py": 3,  # smoke-test inputs of the doctor, any values do
}


def test_science_modules_draw_through_resolve():
    """One rule for random numbers: memcap/*.py and memcap/construct/ call _resolve's samplers, not torch's."""
    root = Path(__file__).resolve().parents[1]
    sampler = re.compile(r"torch\.(randn|rand|randint|randperm|normal|multinomial|bernoulli)\(")
    found = {}
    for path in sorted([*root.glob("memcap/*.py"), *root.glob("memcap/construct/*.py")]):
        name = path.relative_to(root).as_posix()
        count = len(sampler.findall(path.read_text()))
        if count and name != "memcap/_resolve.py":
            found[name] = count
    assert found == INLINE_DRAWS


def test_one_cpu_thread_restores_the_setting():
    before = torch.get_num_threads()
    with _resolve.one_cpu_thread(torch.device("cpu")):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before

"""The book-on-a-GPU runner (tests/gpu_book.py) and its CPU stand-in for a second device (tests/device_sim.py).

The stand-in must fail where CUDA fails and pass where CUDA passes, or its green runs mean nothing: each
rule is checked on a case that crashes on a GPU and on its device-clean twin. The runner must report a
failing cell, a cell that writes to stderr, a device mix (simulated) and a ``raises-exception`` cell that does
not raise, and skip students' templates.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from memcap.textbook.edition import code_changed, code_digest, strip_solutions
from tests import device_sim, gpu_book
from tests.conftest import ROOT


@pytest.fixture
def second_device(monkeypatch):
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")          # install() sets it to cpu:0; restored afterwards
    with device_sim.SecondDevice():
        monkeypatch.setenv("MEMCAP_DEVICE", str(device_sim.STAND_IN))
        yield torch.device(device_sim.STAND_IN)


CRASHES_ON_A_GPU = {
    "a CPU tensor meets a GPU one": lambda dev: torch.ones(3, device=dev) + torch.ones(3),
    "matmul across devices": lambda dev: torch.eye(2, device=dev) @ torch.eye(2),
    "cat across devices": lambda dev: torch.cat([torch.ones(2, device=dev), torch.ones(2)]),
    ".numpy() of a GPU tensor": lambda dev: torch.ones(2, device=dev).numpy(),
    "np.asarray of a GPU tensor": lambda dev: np.asarray(torch.ones(2, device=dev)),
    "a CPU generator drawing on the GPU": lambda dev: torch.randn(2, generator=torch.Generator(), device=dev),
    "a CPU-built module given GPU input": lambda dev: torch.nn.Linear(2, 1)(torch.ones(1, 2, device=dev)),
    "memcap's pick_device() beside torch's default": lambda dev: torch.zeros(2)
        + __import__("memcap.data").data.sinusoidal_positions(2, 4)[0, :2],
}

CLEAN_ON_A_GPU = {
    "both on the device": lambda dev: torch.ones(3, device=dev) + torch.ones(3, device=dev),
    "a 0-d CPU tensor meets a GPU one": lambda dev: torch.ones(3, device=dev) * torch.tensor(2.0),
    "moved with .to": lambda dev: torch.ones(3, device=dev) + torch.ones(3).to(dev),
    "the device of the tensor met": lambda dev: (lambda x: x + torch.ones(3, device=x.device))(
        torch.ones(3, device=dev)),
    ".cpu() before NumPy": lambda dev: torch.ones(2, device=dev).cpu().numpy(),
    "a CPU draw moved": lambda dev: torch.randn(2, generator=torch.Generator()).to(dev) + torch.ones(2, device=dev),
    "a module moved to the device": lambda dev: torch.nn.Linear(2, 1).to(dev)(torch.ones(1, 2, device=dev)),
    "a GPU tensor indexed with CPU indices": lambda dev: torch.arange(5.0, device=dev)[torch.tensor([0, 2])],
    "a backward pass on the device": lambda dev: (torch.ones(2, device=dev, requires_grad=True) * 3).sum().backward(),
}


@pytest.mark.parametrize("name", CRASHES_ON_A_GPU)
def test_the_stand_in_fails_where_cuda_fails(name, second_device):
    with pytest.raises(device_sim.DeviceMix):
        CRASHES_ON_A_GPU[name](second_device)


@pytest.mark.parametrize("name", CLEAN_ON_A_GPU)
def test_the_stand_in_passes_where_cuda_passes(name, second_device):
    CLEAN_ON_A_GPU[name](second_device)


def test_the_stand_in_moves_labels_like_devices(second_device):
    x = torch.ones(3, device=second_device)
    assert device_sim.label(x) == "gpu" and x.device == second_device
    y = x.cpu()
    assert device_sim.label(y) == "cpu" and device_sim.label(x) == "gpu"     # a move copies, as on a GPU
    z = torch.zeros(3).to(second_device)
    assert device_sim.label(z) == "gpu"
    assert device_sim.label((x * 2).sum()) == "gpu"
    import memcap

    task = memcap.mahdavi_task(examples=3, context_size=2, dim=4, task="regression")
    assert device_sim.label(task.contexts) == "gpu"                          # pick_device() is the device


def _chapter(tmp_path, *cells: tuple[str, str]) -> str:
    text = "# A chapter\n\n" + "\n".join(
        f"```{{code-cell}} ipython3\n{tags}\n{textwrap.dedent(src).strip()}\n```\n" for tags, src in cells)
    path = tmp_path / "chapter.md"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run(path: str, *flags: str) -> dict:
    out = path + ".json"
    proc = subprocess.run([sys.executable, "-m", "tests.gpu_book", "--jobs", "1", "--json", out, *flags, path],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = json.loads(open(out, encoding="utf-8").read())["chapters"][0]
    assert proc.returncode == (0 if report["status"] == "ok" else 1), proc.stdout + proc.stderr
    return report


def test_the_runner_executes_cells_in_order_and_counts_figures(tmp_path):
    path = _chapter(tmp_path,
                    (":tags: [hide-input]", "import matplotlib.pyplot as plt\nfrom myst_nb import glue\nx = 2"),
                    ("", "fig, ax = plt.subplots()\nglue('x', x, display=False)\nassert x == 2"),
                    (":tags: [skip-execution]", "raise RuntimeError('a student template is not run')"),
                    ("---\ntags: [raises-exception]\n---", "1 / 0"))
    report = _run(path)
    assert report["status"] == "ok", report
    assert (report["cells"], report["skipped"], report["figures"]) == (3, 1, 1)
    # the run records what code it ran, so that a later change of the chapter shows on the status page
    assert report["code_sha"] == code_digest(open(path, encoding="utf-8").read())


_SOLVED = """# A chapter

Prose.

```{code-cell} ipython3
x = 1
```

```{solution-start} ex-1
:class: dropdown
```
```{code-cell} ipython3
y = x + 1
```
```{solution-end}
```
"""


def test_the_code_fingerprint_sees_code_not_prose_and_both_editions():
    recorded = code_digest(_SOLVED)
    assert not code_changed(recorded, _SOLVED)
    assert not code_changed(recorded, _SOLVED.replace("Prose.", "Other prose."))
    assert code_changed(recorded, _SOLVED.replace("x = 1", "x = 2"))
    # a change inside a solution is a change of what ran...
    assert code_changed(recorded, _SOLVED.replace("y = x + 1", "y = x + 2"))
    # ...but the student edition has no solutions: it compares the code outside them, unchanged here
    assert not code_changed(recorded, strip_solutions(_SOLVED))
    assert code_changed(recorded, strip_solutions(_SOLVED.replace("x = 1", "x = 2")))
    with pytest.raises(ValueError, match="recorded must be a code_digest"):
        code_changed("abc", _SOLVED)
    with pytest.raises(TypeError, match="text must be a str"):
        code_digest(None)


@pytest.mark.parametrize("source, message", [
    ("assert 1 == 2", "cell 0: AssertionError"),
    ("import sys\nprint('careful', file=sys.stderr)", "cell 0 wrote to stderr: careful"),
    ("import warnings\nwarnings.warn('deprecated')", "cell 0 wrote to stderr"),
])
def test_the_runner_fails_a_chapter_like_the_strict_build(tmp_path, source, message):
    report = _run(_chapter(tmp_path, ("", source)))
    assert report["status"] == "FAIL" and message in report["error"], report


def test_the_runner_fails_a_raises_exception_cell_that_does_not_raise(tmp_path):
    report = _run(_chapter(tmp_path, (":tags: [raises-exception]", "x = 1")))
    assert report["status"] == "FAIL" and "did not raise" in report["error"]


def test_the_simulated_run_finds_the_device_mix_a_cpu_run_misses(tmp_path):
    source = """
        import torch
        from memcap import device
        dev = device.pick_device()
        x = torch.ones(3, device=dev) + torch.arange(3)
    """
    path = _chapter(tmp_path, ("", source))
    assert _run(path)["status"] == "ok"
    report = _run(path, "--simulate")
    assert report["status"] == "FAIL" and "DeviceMix" in report["error"] and "cell 0" in report["error"], report
    assert report["device"] == "cpu:0"


def test_the_cell_reader_keeps_tags():
    text = ("```{code-cell} ipython3\n---\ntags: [hide-input, raises-exception]\n---\n%time x = 1\ny = 2\n```\n"
            "```{code-cell} ipython3\n:tags: [skip-execution]\n\nz = 3\n```\n")
    assert gpu_book.cells(text) == [("tags: [hide-input, raises-exception]", "y = 2\n"),
                                    (":tags: [skip-execution]", "\nz = 3\n")]


def test_the_runner_works_without_ipython():
    """A GPU image has no IPython: the stand-ins must let matplotlib draw and chapters display."""
    code = ("import sys; sys.modules['IPython'] = None\n"
            "from tests import gpu_book; gpu_book._stub_notebook_modules()\n"
            "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; plt.subplots()\n"
            "from IPython.display import Math, Markdown, display; display(Math('x'), Markdown('y'))\n"
            "from myst_nb import glue; glue('a', 1, display=False); print('drawn')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "drawn", proc.stderr[-800:]


def test_the_recorded_gpu_run_is_a_real_run_of_todays_chapters():
    """The *Build status* page shows book/appendix/gpu_book.json: it must come from CUDA, not the stand-in,
    name its commit, and list chapters that exist, with what the page reads."""
    record = json.loads((ROOT / "book" / "appendix" / "gpu_book.json").read_text(encoding="utf-8"))
    assert record["simulated"] is False and record["machine"]["device"].startswith("cuda")
    assert "NVIDIA" in record["machine"]["device_name"] and len(record["machine"]["commit"]) >= 7
    chapters = [c["chapter"] for c in record["chapters"]]
    assert len(chapters) == len(set(chapters)) and all((ROOT / c).is_file() for c in chapters)
    missing = {p.relative_to(ROOT).as_posix() for p in gpu_book.toc_chapters()} - set(chapters)
    assert missing <= {"book/appendix/status.md"}, f"chapters never run on a GPU: {sorted(missing)}"
    for c in record["chapters"]:
        assert c["status"] in {"ok", "FAIL", "timeout"} and c["seconds"] >= 0
        code_changed(c["code_sha"], "")     # the status page compares it: a well-formed fingerprint
    assert {"summary", "exit", "command"} <= set(record["gpu_suite"]) and record["doctor"]["exits"]


@pytest.mark.slow
def test_every_chapter_runs_on_a_simulated_second_device(tmp_path):
    """CI has no GPU: every chapter's cells run under the stand-in second device, so a device mix that only
    a GPU would show fails here (about 10 minutes on two cores)."""
    out = tmp_path / "sim.json"
    proc = subprocess.run([sys.executable, "-m", "tests.gpu_book", "--simulate", "--jobs", "2", "--threads", "1",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=3000)
    record = json.loads(out.read_text(encoding="utf-8"))
    bad = [f"{c['chapter']}: {c['status']}: {c.get('error', '')}" for c in record["chapters"] if c["status"] != "ok"]
    assert not bad and proc.returncode == 0, "\n".join(bad) or proc.stdout[-2000:]
    assert len(record["chapters"]) == len(gpu_book.toc_chapters())

"""The book's GPU path: the whole public API, the constructions and the engine on a second device.

Run with ``pytest -m gpu`` on a machine with CUDA or Apple's MPS; elsewhere every test here is skipped
with the reason (CI has no GPU). ``python -m memcap doctor`` runs the same kind of checks from the
command line.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from memcap import device as memdevice
from memcap import doctor
from tests.api_cases import cases

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu() -> torch.device:
    """The second device: CUDA if present, else MPS; skip, saying why, when there is neither."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if memdevice._mps_available():
        return torch.device("mps")
    pytest.skip(f"no second device: torch {torch.__version__} sees no CUDA (built with CUDA {torch.version.cuda}) "
                f"and no MPS; run `pytest -m gpu` on a machine with a GPU")


def _devices(value: object) -> set[str]:
    """The device types of every tensor inside a result."""
    if isinstance(value, torch.Tensor):
        return {value.device.type}
    if isinstance(value, torch.nn.Module):
        return {p.device.type for p in value.parameters()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return set().union(*(_devices(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return set().union(set(), *(_devices(v) for v in value.values()))
    if isinstance(value, (tuple, list)):
        return set().union(set(), *(_devices(v) for v in value))
    return set()


CASES = cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_public_api_runs_on_the_second_device_and_stays_there(name, gpu):
    """One rule: results live on the device of the tensor inputs, else on the device asked for."""
    case = CASES[name]
    if case.missing is not None:
        pytest.skip(case.missing)
    if name.startswith(("memcap.construct.dana", "memcap.certify")) and memdevice.exact_dtype(gpu) != torch.float64:
        pytest.skip(f"{name} needs float64, which {gpu.type} lacks")
    kwargs = case.build(gpu)
    result = case.call(kwargs)
    assert _devices(result) <= {gpu.type}, f"{name} returned tensors on {_devices(result)}"


def test_doctor_passes_on_the_second_device(gpu):
    assert doctor.run_doctor(str(gpu), bench_models=8, bench_steps=50)


def test_constructions_agree_with_the_cpu(gpu):
    """Theorem 1's construction on the GPU memorizes as on the CPU (float64; its weights may differ in
    rounding, both fit the labels to 1e-6)."""
    from memcap.construct import mahdavi
    from memcap.data import mahdavi_task

    if memdevice.exact_dtype(gpu) != torch.float64:
        pytest.skip(f"{gpu.type} has no float64")
    task = mahdavi_task(31, 6, 12, shared=False, task="regression", generator=torch.Generator().manual_seed(0),
                        dtype=torch.float64, device="cpu")
    on_cpu = mahdavi.theorem1_construction(task.contexts, task.queries, task.labels, heads=6, head_dim=6)
    moved = task.to(gpu)
    on_gpu = mahdavi.theorem1_construction(moved.contexts, moved.queries, moved.labels, heads=6, head_dim=6)
    assert on_cpu.max_error <= 1e-6 and on_gpu.max_error <= 1e-6
    assert np.allclose(on_gpu.key_query.features.cpu().numpy(), on_cpu.key_query.features.numpy(), atol=1e-6)

"""The book's GPU path: the whole public API, the constructions and the engine on a second device.

Run with ``pytest -m gpu`` on a machine with CUDA or Apple's MPS; elsewhere the tests marked ``gpu`` are
skipped with the reason (CI has no GPU). ``python -m memcap doctor`` runs the same kind of checks from the
command line.

One device has two names on a GPU: :func:`memcap.device.pick_device` says ``cuda``, the tensors made there
say ``cuda:0``, and torch holds the two unequal. The unmarked tests run the same cases and the doctor on
the CPU spelled ``cpu:0`` (tensors there say ``cpu``), so CI catches a device compared by its spelling
without a GPU.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from memcap import device as memdevice
from memcap import doctor
from tests.api_cases import cases

STAND_IN = torch.device("cpu:0")
"""The CPU under a second name: ``cpu:0`` is to ``cpu`` what ``cuda`` is to ``cuda:0``."""


@pytest.fixture(scope="module")
def gpu() -> torch.device:
    """The second device: CUDA if present, else MPS; skip, saying why, when there is neither."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if memdevice._mps_available():
        return torch.device("mps")
    pytest.skip(f"no second device: torch {torch.__version__} sees no CUDA (built with CUDA {torch.version.cuda}) "
                f"and no MPS; run `pytest -m gpu` on a machine with a GPU")


def _devices(value: object) -> set[torch.device]:
    """The devices of every tensor inside a result, in canonical form (type and index)."""
    if isinstance(value, torch.Tensor):
        return {memdevice.canonical_device(value.device)}
    if isinstance(value, torch.nn.Module):
        return {memdevice.canonical_device(p.device) for p in value.parameters()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return set().union(*(_devices(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return set().union(set(), *(_devices(v) for v in value.values()))
    if isinstance(value, (tuple, list)):
        return set().union(set(), *(_devices(v) for v in value))
    return set()


CASES = cases()


def _runs_there_and_stays_there(name: str, where: torch.device) -> None:
    """Call case ``name`` with its tensors and its ``device`` argument on ``where``; every tensor of the
    result must be on that device (compared canonically: ``cuda`` is ``cuda:0``)."""
    case = CASES[name]
    if case.missing is not None:
        pytest.skip(case.missing)
    if name.startswith(("memcap.construct.dana", "memcap.certify")) and memdevice.exact_dtype(where) != torch.float64:
        pytest.skip(f"{name} needs float64, which {where.type} lacks")
    result = case.call(case.build(where))
    assert _devices(result) <= {memdevice.canonical_device(where)}, \
        f"{name} returned tensors on {_devices(result)}, asked for {where}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_public_api_runs_on_the_second_device_and_stays_there(name, gpu):
    """One rule: results live on the device of the tensor inputs, else on the device asked for."""
    _runs_there_and_stays_there(name, gpu)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_public_api_accepts_a_second_name_of_its_device(name, one_thread):
    """The stand-in on the CPU: asked for ``cpu:0``, given tensors that say ``cpu``, nothing is refused."""
    _runs_there_and_stays_there(name, STAND_IN)


@pytest.mark.gpu
def test_doctor_passes_on_the_second_device(gpu):
    assert doctor.run_doctor(str(gpu), bench_models=8, bench_steps=50)


def test_doctor_passes_on_a_second_name_of_its_device(one_thread):
    lines: list[str] = []
    assert doctor.run_doctor(str(STAND_IN), run_benchmark=False, out=lines.append), "\n".join(lines)
    assert lines[0].startswith("Ran on cpu:0") and lines[-1] == "doctor: all checks passed"


@pytest.mark.gpu
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

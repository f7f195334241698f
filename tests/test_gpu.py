"""The book's GPU path: the whole public API, the constructions and the engine on a second device.

Run with ``pytest -m gpu`` on a machine with CUDA or Apple's MPS; elsewhere the tests marked ``gpu`` are
skipped with the reason (CI has no GPU). ``python -m memcap doctor`` runs the same kind of checks from the
command line.

One device has two names on a GPU: :func:`memcap.device.pick_device` says ``cuda``, the tensors made there
say ``cuda:0``, and torch holds the two unequal. The unmarked tests run the same cases and the doctor on
the CPU spelled ``cpu:0`` (tensors there say ``cpu``), so CI catches a device compared by its spelling
without a GPU. They also run every case in float32, the precision a GPU computes in (MPS has no float64):
each result keeps its input's precision (or is one of the float64 constructions listed below) and agrees
with the float64 result.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

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


COMPUTES_IN_FLOAT64 = {
    **{f"memcap.construct.mahdavi.{name}": "a construction: computes in float64 whatever its input"
       for name in ("key_query_construction", "key_query_for_rank", "memorize", "rank_one_separator",
                    "readout_weights", "saturation_bound", "saturation_error", "softmax_limit",
                    "theorem1_construction", "top_gap")},
    **{f"memcap.construct.dana.{name}": "a construction: computes in float64 whatever its input"
       for name in ("best_sequence_encoder", "exact_sequence_encoder", "fit_aot", "lemma2_params", "minimize_kl")},
    "memcap.construct.dana_features.rank_one_witness": "a construction: computes in float64",
    "memcap.lookup.common_scale_encoder": "Dana et al.'s Theorem 2 encoder: a construction in float64",
    "memcap.lookup.noisy_lookup_rows": "probabilities built in float64 from the entropies",
    **{f"memcap.synthesis.{name}": "built on Mahdavi et al.'s construction (float64)"
       for name in ("label_aware_head", "mahdavi_association_aot", "mahdavi_classifier")},
    "memcap.fits.non_saturated": "a NumPy fit: float64 arrays",
    "memcap.train.inspection.trained_attention": "returns float64 NumPy arrays for the plots",
    "memcap.synthesis.trained_aot_attention": "returns float64 NumPy arrays for the plots",
    "memcap.synthesis.classifier_attention": "the attention of Mahdavi et al.'s construction, in float64 as the "
                                             "construction's weights are",
    "memcap.train.schedule.lr_factor": "a learning-rate factor in float64 whatever the dtype of the step",
    **{f"memcap.construct.{name}": "a construction in float64; its float32 probabilities (and unit rows) are "
                                   "checked to float32's rounding, then renormalized in float64"
       for name in ("dana.lookup_sequence_encoder", "dana.theorem1_aot", "dana_features.theorem1_build",
                    "mahdavi.claim1_head", "mahdavi.claim2_head")},
}
"""Cases whose floating results are float64 when their floating inputs are float32, with the reason."""


def _to_float32(value: object) -> object:
    """``value`` with every floating tensor, array and module inside it converted to float32."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() else value
    if isinstance(value, np.ndarray):
        return value.astype(np.float32) if value.dtype.kind == "f" else value
    if isinstance(value, torch.nn.Module):
        return value.float()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _to_float32(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    if isinstance(value, dict):
        return {k: _to_float32(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_to_float32(v) for v in value)
    return value


def _float_dtypes(value: object) -> set[str]:
    """The floating dtypes of every tensor, array and module parameter inside ``value``."""
    if isinstance(value, torch.Tensor):
        return {str(value.dtype).removeprefix("torch.")} if value.is_floating_point() else set()
    if isinstance(value, np.ndarray):
        return {str(value.dtype)} if value.dtype.kind == "f" else set()
    if isinstance(value, torch.nn.Module):
        return set().union(set(), *(_float_dtypes(p) for p in value.parameters()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return set().union(set(), *(_float_dtypes(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return set().union(set(), *(_float_dtypes(v) for v in value.values()))
    if isinstance(value, (tuple, list)):
        return set().union(set(), *(_float_dtypes(v) for v in value))
    return set()


def _differences(single: object, double: object, where: str = "result") -> list[str]:
    """Where a float32 result and its float64 counterpart disagree: shapes, integer and bool values,
    verdicts exactly; floating values relative to the largest entry (1e-4, float32 rounding through a
    few operations); numbers relative likewise (large integers: exact enclosures of rounded inputs), or
    within 1e-10 (an error at rounding level, 4e-16 in one run and 9e-16 in the other)."""
    if isinstance(double, torch.nn.Module):
        single, double = single.state_dict(), double.state_dict()
    if isinstance(double, (torch.Tensor, np.ndarray)):
        a = torch.as_tensor(np.asarray(single.detach().cpu()) if isinstance(single, torch.Tensor) else single)
        b = torch.as_tensor(np.asarray(double.detach().cpu()) if isinstance(double, torch.Tensor) else double)
        if a.shape != b.shape:
            return [f"{where}: shape {tuple(a.shape)} != {tuple(b.shape)}"]
        if not b.is_floating_point():
            return [] if torch.equal(a, b) else [f"{where}: integer values differ"]
        scale = float(b.abs().max()) if b.numel() else 0.0
        gap = float((a.double() - b.double()).abs().max()) if b.numel() else 0.0
        close = gap <= 1e-4 * max(scale, 1e-30)
        return [] if close else [f"{where}: differs by {gap:.3g} (largest |entry| {scale:.3g})"]
    if dataclasses.is_dataclass(double) and not isinstance(double, type):
        return [d for f in dataclasses.fields(double)
                for d in _differences(getattr(single, f.name), getattr(double, f.name), f"{where}.{f.name}")]
    if isinstance(double, dict):
        if set(single) != set(double):
            return [f"{where}: keys differ"]
        return [d for k in double for d in _differences(single[k], double[k], f"{where}[{k!r}]")]
    if isinstance(double, (tuple, list)):
        if len(single) != len(double):
            return [f"{where}: length {len(single)} != {len(double)}"]
        return [d for k, (s, t) in enumerate(zip(single, double)) for d in _differences(s, t, f"{where}[{k}]")]
    if type(double).__name__ == "Figure":   # a matplotlib figure (memcap.textbook.page.stack_for_phone): its layout
        return _differences([*map(float, single.get_size_inches()), len(single.axes)],
                            [*map(float, double.get_size_inches()), len(double.axes)], f"{where} (figure)")
    if isinstance(double, (int, float)) and not isinstance(double, bool):
        close = single == double or math.isclose(single, double, rel_tol=1e-4, abs_tol=1e-10)
        return [] if close else [f"{where}: {single!r} != {double!r}"]
    return [] if single == double or callable(double) else [f"{where}: {single!r} != {double!r}"]


def _seeded_build(name: str) -> dict:
    """The case's arguments on the stand-in device; torch's global generator seeded (the small real models
    initialise their layers from it), so two builds are equal."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return CASES[name].build(STAND_IN)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_public_api_in_float32_keeps_the_precision_and_the_values(name, one_thread):
    """The stand-in for the GPU's float32: every case with its floating inputs in float32. Its floating results
    are float32 (float64 for the constructions of :data:`COMPUTES_IN_FLOAT64`), and they agree with the
    float64 call: same shapes, ids, verdicts, values within float32 rounding."""
    case = CASES[name]
    if case.missing is not None:
        pytest.skip(case.missing)
    inputs = _seeded_build(name)
    single_inputs = _to_float32(_seeded_build(name))
    double = case.call(inputs)
    single = case.call(single_inputs)
    if "float32" in _float_dtypes(single_inputs) and _float_dtypes(double):
        expected = {"float64"} if name in COMPUTES_IN_FLOAT64 else {"float32"}
        assert _float_dtypes(single) == expected, COMPUTES_IN_FLOAT64.get(name, "float32 in, float32 out")
    else:
        assert name not in COMPUTES_IN_FLOAT64, "listed, but it has no floating input or result"
    if "float64" in _float_dtypes(inputs):
        assert _float_dtypes(double) <= {"float64"}, "float64 in, float32 out: precision lost"
    assert _differences(single, double) == []


def test_the_float32_exceptions_name_cases():
    """A renamed or removed function cannot stay behind in the lists of exceptions."""
    assert set(COMPUTES_IN_FLOAT64) <= set(CASES)


def _small_stacks() -> list:
    from memcap.train import AoTSpec, MHASpec

    return [MHASpec(heads=h, context_size=4, examples=12, dim=8, classes=3, seed=h) for h in (1, 2, 4)] + \
        [AoTSpec(heads=h, head_dim=4, dim=4, vocab=4, seed=h) for h in (1, 3)]


@pytest.mark.gpu
def test_the_compiled_step_on_cuda_computes_what_the_eager_step_computes(gpu):
    """``compile='always'`` on CUDA (Inductor's kernels replayed as CUDA graphs) against the eager step."""
    from memcap.train import TrainConfig, compiled, train_models

    if gpu.type != "cuda" or compiled.compile_blocker(gpu) is not None:
        pytest.skip(f"no compiled step on {gpu.type}: {compiled.compile_blocker(gpu)}")
    config = TrainConfig(steps=600, batch_size=8, lr=5e-3, eval_every=100, device=str(gpu))
    eager = train_models(_small_stacks(), config, compile="never")
    fast = train_models(_small_stacks(), config, compile="always")
    assert fast.compiled.all() and not eager.compiled.any()
    np.testing.assert_allclose(fast.history_loss, eager.history_loss, rtol=1e-3, atol=1e-6)
    assert np.array_equal(fast.memorized, eager.memorized)


@pytest.mark.gpu
def test_training_steps_do_not_wait_for_the_gpu(gpu):
    """Between two evaluations a step makes no host-device synchronisation (torch's sync debug mode counts
    them): twice the steps, the same count."""
    from memcap.train import TrainConfig, train_models

    if gpu.type != "cuda":
        pytest.skip("torch's synchronisation debug mode is CUDA's")

    def syncs(steps: int) -> int:
        config = TrainConfig(steps=steps, batch_size=8, eval_every=10 ** 6, device=str(gpu))
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                train_models(_small_stacks(), config, compile="never")
        finally:
            torch.cuda.set_sync_debug_mode("default")
        return sum("synchroniz" in str(w.message) for w in caught)
    few = syncs(256)
    assert few > 0 and syncs(512) == few


@pytest.mark.gpu
def test_steps_recorded_as_cuda_graphs_give_the_eager_numbers(gpu):
    """``cuda_graphs='always'``: each stack's step recorded once and replayed; the same kernels on the same data."""
    from memcap.train import TrainConfig, train_models
    from memcap.train.graphs import GraphWarning

    if gpu.type != "cuda":
        pytest.skip("CUDA graphs are CUDA's")
    for config in (TrainConfig(steps=700, batch_size=8, lr=5e-3, eval_every=100, device=str(gpu)),
                   TrainConfig(steps=300, lr=5e-3, eval_every=100, device=str(gpu))):
        eager = train_models(_small_stacks(), config, keep_params=True, compile="never", cuda_graphs="never")
        with warnings.catch_warnings():
            warnings.simplefilter("error", GraphWarning)   # recorded, not fallen back to the eager step
            replayed = train_models(_small_stacks(), config, keep_params=True, compile="never", cuda_graphs="always")
        np.testing.assert_allclose(replayed.history_loss, eager.history_loss, rtol=1e-5, atol=1e-7)
        assert np.array_equal(replayed.stop_step, eager.stop_step)
        assert np.array_equal(replayed.steps, eager.steps)


PETABYTE = 1 << 50
"""Bytes no card has: asking for them raises torch's out-of-memory error from the real allocator."""


def _greedy_steps(monkeypatch, gpu, when) -> None:
    """Every StaticStep's step first asks the GPU for :data:`PETABYTE` bytes where ``when(models)`` (the
    stack's size) is true while capturing (``"capture"``) or warming up on the side stream (``"warm-up"``)."""
    from memcap.train import graphs

    real_init = graphs.StaticStep.__init__

    def init(self, body, idx, *args):
        models = idx.shape[0]

        def greedy(*step):
            capturing = torch.cuda.is_current_stream_capturing()
            warming = not capturing and torch.cuda.current_stream(gpu) != torch.cuda.default_stream(gpu)
            if when(models, "capture" if capturing else "warm-up" if warming else "replay or eager"):
                torch.empty(PETABYTE, dtype=torch.uint8, device=gpu)
            body(*step)
        real_init(self, greedy, idx, *args)
    monkeypatch.setattr(graphs.StaticStep, "__init__", init)


@pytest.mark.gpu
def test_cuda_graphs_a_capture_out_of_memory_leaves_the_eager_step_and_a_working_gpu(gpu, monkeypatch):
    """Out of memory inside a real capture (after the warm-up fitted): a GraphWarning, the stack trains with
    the eager step and the eager numbers, and the next recordings on that GPU succeed."""
    from memcap.train import TrainConfig, train_models
    from memcap.train.graphs import GraphWarning

    if gpu.type != "cuda":
        pytest.skip("CUDA graphs are CUDA's")
    config = TrainConfig(steps=300, batch_size=8, lr=5e-3, eval_every=100, device=str(gpu))
    eager = train_models(_small_stacks(), config, keep_params=True, compile="never", cuda_graphs="never")
    with monkeypatch.context() as patched:
        _greedy_steps(patched, gpu, lambda models, phase: phase == "capture")
        with pytest.warns(GraphWarning, match="recording the step as a CUDA graph failed") as caught:
            fallen = train_models(_small_stacks(), config, keep_params=True, compile="never", cuda_graphs="always")
    assert all("out of memory" in str(w.message).lower() for w in caught if issubclass(w.category, GraphWarning))
    np.testing.assert_allclose(fallen.history_loss, eager.history_loss, rtol=1e-5, atol=1e-7)
    assert np.array_equal(fallen.stop_step, eager.stop_step)
    assert not torch.cuda.is_current_stream_capturing()
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphWarning)
        again = train_models(_small_stacks(), config, keep_params=True, compile="never", cuda_graphs="always")
    np.testing.assert_allclose(again.history_loss, eager.history_loss, rtol=1e-5, atol=1e-7)


@pytest.mark.gpu
def test_cuda_graphs_a_warm_up_out_of_memory_splits_the_stack(gpu, monkeypatch):
    """Out of memory in the warm-up (the eager step does not fit): the stack trains as smaller stacks, each
    recorded, with the numbers of models trained one stack each."""
    from memcap.train import TrainConfig, train_models
    from memcap.train.graphs import GraphWarning
    from memcap.train.loop import MemorySplitWarning

    if gpu.type != "cuda":
        pytest.skip("CUDA graphs are CUDA's")
    config = TrainConfig(steps=300, batch_size=8, lr=5e-3, eval_every=100, device=str(gpu))
    alone = train_models(_small_stacks(), config, keep_params=True, compile="never", cuda_graphs="never", max_stack=1)
    with monkeypatch.context() as patched, warnings.catch_warnings():
        warnings.simplefilter("error", GraphWarning)
        _greedy_steps(patched, gpu, lambda models, phase: phase == "warm-up" and models > 1)
        with pytest.warns(MemorySplitWarning, match="ran out of cuda memory"):
            split = train_models(_small_stacks(), config, keep_params=True, compile="never", cuda_graphs="always")
    np.testing.assert_allclose(split.history_loss, alone.history_loss, rtol=1e-5, atol=1e-7)
    assert np.array_equal(split.stop_step, alone.stop_step)

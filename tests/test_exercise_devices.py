"""The exercise checkers on a machine with a GPU, tested on the CPU: a student's function gets its inputs on
the chapter's device (``checking.case_device``, which is ``pick_device()``), a right answer passes whichever
device it is on, and a function that mixes devices is told what to move.

CI has no GPU, so the tests stand in the ``meta`` device for CUDA: a checker whose case device is patched to
``meta`` must hand the student's function meta tensors only (a tensor it forgot to move stays on the CPU),
and compare what the function returns where its own reference is (a reference computed from the meta inputs
has no values, and the check fails). The tests marked ``gpu`` do the same with CUDA and real device mixes
(``pytest -m gpu`` on a machine with one; skipped, saying why, elsewhere).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from memcap import models
from memcap.device import same_device
from memcap.textbook.exercises import checking, registry, run_check

CHECKED = registry()
META = torch.device("meta")

TENSOR_INPUTS = {
    "ex-setting-3", "ex-mahdavi-assumptions-3", "ex-mahdavi-one-head-3", "ex-mahdavi-rank-of-z-3",
    "ex-mahdavi-saturation-3", "ex-mahdavi-skip-3", "ex-mahdavi-theorem1-3", "ex-mahdavi-tightness-3",
    "ex-mahdavi-toolkit-3", "ex-dana-aot-3", "ex-dana-se-3", "ex-dana-t1-3", "ex-syn-open-3",
}
"""The exercises whose answer is a function that the checker calls with tensors (or records of tensors)."""


@pytest.fixture
def meta_cases(monkeypatch):
    """Checkers hand their cases over on the stand-in device ``meta``, as they would on CUDA."""
    monkeypatch.setattr(checking, "case_device", lambda: META)


@pytest.fixture
def cpu_cases(monkeypatch):
    """The chapter's device is the CPU (``MEMCAP_DEVICE=cpu``), also on a machine with a GPU."""
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")


@pytest.fixture(scope="module")
def cuda() -> torch.device:
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA: torch {torch.__version__} sees no GPU; run `pytest -m gpu` on a machine with one")
    return torch.device("cuda")


def _tensors(value, depth=0):
    """Every tensor in ``value``: a tensor, a list or tuple of them, a record (dataclass) of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 3:
        return []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v, depth + 1)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in _tensors(getattr(value, f.name), depth + 1)]
    return []


# --- where the cases go --------------------------------------------------------------------------------

def test_the_case_device_is_the_chapters_device(monkeypatch):
    """``pick_device()`` decides (MEMCAP_DEVICE, else CUDA, else MPS, else the CPU); MPS, which has no
    float64, gets the cases on the CPU."""
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    assert checking.case_device() == torch.device("cpu")
    for picked, expected in (("cuda", "cuda"), ("cuda:1", "cuda:1"), ("mps", "cpu"), ("cpu", "cpu")):
        monkeypatch.setattr("memcap.device.pick_device", lambda prefer=None, picked=picked: torch.device(picked))
        assert checking.case_device() == torch.device(expected), picked


@pytest.mark.parametrize("stand_in", [True, False], ids=["meta", "chapter-device"])
@pytest.mark.parametrize("label", sorted(CHECKED))
def test_every_checker_hands_its_inputs_over_on_the_case_device(label, stand_in, monkeypatch, one_thread):
    """A spy answer records the tensors it is given, then raises: all of them are on the case device (the
    stand-in ``meta``, or the chapter's device: CUDA on a GPU, the CPU elsewhere)."""
    if stand_in:
        monkeypatch.setattr(checking, "case_device", lambda: META)
    where = checking.case_device()
    seen: list[torch.Tensor] = []

    def spy(*args, **kwargs):
        seen.extend(_tensors([*args, *kwargs.values()]))
        raise RuntimeError("the spy stops here")

    parameters = CHECKED[label].function.__code__.co_argcount
    result = run_check(label, *[spy] * parameters)
    assert not result.passed
    if label not in TENSOR_INPUTS:
        assert not seen, f"{label} gives tensors to the student's function: add it to TENSOR_INPUTS"
        return
    assert seen, f"{label}: the spy got no tensors\n{result.message}"
    assert "the spy stops here" in " ".join(result.message.split()), result.message
    elsewhere = sorted({str(t.device) for t in seen if not same_device(t.device, where)})
    assert not elsewhere, f"{label} hands tensors on {elsewhere}, not on the case device ({where})"


def test_inputs_are_copies_on_the_case_device_and_answers_move_to_the_reference(meta_cases):
    layer = models.init_mha(2, 4, 3, 3, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64,
                            device="cpu")
    contexts = torch.rand(5, 4, dtype=torch.float64, device="cpu")
    given_layer, given_contexts, heads = checking.to_case_device(layer, contexts, 2)
    assert isinstance(given_layer, models.MHAParams) and heads == 2
    assert {t.device for t in (*given_layer.parameters(), given_contexts)} == {META}
    assert checking.to_case_device(contexts).device == META           # one value: the value itself
    moved = checking.on_device(layer, META)
    assert {t.device for t in moved.parameters()} == {META} and layer.W_K.device.type == "cpu"
    assert checking.on_device(layer, "cpu") is layer                      # already there: unchanged
    assert checking.on_device([contexts, "label"], META)[0].device == META


def test_to_case_device_copies_so_the_function_cannot_change_the_checkers_case():
    contexts = torch.zeros(3, 2, dtype=torch.float64, device="cpu")
    given = checking.to_case_device(contexts)
    given += 1
    assert float(contexts.abs().max()) == 0.0


@pytest.mark.parametrize("answer", [torch.ones(2, 3, dtype=torch.float32, device="cpu"),
                                    np.ones((2, 3)), [[1.0] * 3] * 2,
                                    torch.ones(6, dtype=torch.float64, device="cpu").reshape(2, 3)])
def test_tensor_answers_go_where_the_reference_is(answer):
    """A tensor answer is compared on the reference's device, whatever device or type it came in."""
    reference = torch.ones(2, 3, dtype=torch.float64, device=META)     # a reference on the stand-in device
    got = checking.tensor_answer(answer, (2, 3), "the answer", device=reference.device)
    assert got.device == META and got.dtype == torch.float64
    assert (got - reference).device == META                            # no device mix in the comparison
    on_cpu = checking.tensor_answer(answer, (2, 3), "the answer")       # default: the CPU, where cases are built
    assert on_cpu.device.type == "cpu" and float(on_cpu.sum()) == 6.0


# --- a right answer on another device passes ------------------------------------------------------------

def test_a_right_answer_on_the_cpu_passes_while_the_inputs_are_elsewhere(meta_cases, one_thread):
    """The student's function gets meta inputs and returns the right CPU tensors (computed from the same
    case on the CPU): the checker compares them where its reference is, and they pass."""
    from memcap.textbook.exercises import setting

    cases = setting._layers()

    def shared_and_repeated(layer, context, queries):
        assert {t.device for t in (*layer.parameters(), context, queries)} == {META}
        _, layer, context, queries = next(cases)           # the same case, on the CPU
        T, (n, d) = queries.shape[0], context.shape
        return (models.mha_forward(layer, context, queries),
                models.mha_forward(layer, context.expand(T, n, d), queries),
                models.mha_attention(layer.W_K, layer.W_Q, context, queries))

    result = run_check("ex-setting-3", shared_and_repeated)
    assert result.passed, result.message


def test_a_right_layer_on_the_cpu_passes_while_the_inputs_are_elsewhere(meta_cases, one_thread):
    from memcap.construct import mahdavi
    from memcap.construct import mahdavi_limits as ml
    from memcap.textbook.exercises import mahdavi_skip

    cases = mahdavi_skip._two_layer_cases()

    def second_layer(contexts, queries, labels, first_layer, heads, head_dim):
        assert {contexts.device, labels.device, first_layer.W_K.device} == {META}
        _, contexts, queries, labels, first_layer, _, _ = next(cases)
        contexts, queries = ml.apply_self_attention(first_layer, contexts, queries)
        return mahdavi.memorize(contexts, queries, labels, heads=heads, head_dim=head_dim)

    result = run_check("ex-mahdavi-skip-3", second_layer)
    assert result.passed, result.message


@pytest.mark.parametrize("triple, verdict", [(-1, None), (0, "larger than needed")])
def test_a_perturbation_from_another_devices_svd_is_judged_by_its_norm(triple, verdict):
    """A CUDA SVD leaves rounding of order eps sigma_1(A) in Delta (seen on an H200): the rank of A + Delta is
    counted at A's scale, so the right answer passes and the largest triple is refused for its norm."""
    def rank_lowering_perturbation(A):
        U, S, Vh = torch.linalg.svd(A, full_matrices=False)
        k = int(torch.linalg.matrix_rank(A)) - 1 if triple == -1 else triple
        noise = torch.randn(A.shape, generator=torch.Generator().manual_seed(0), dtype=A.dtype, device="cpu")
        return -S[k] * torch.outer(U[:, k], Vh[k]) + 3e-15 * float(S[0]) * noise.to(A.device)

    result = run_check("ex-mahdavi-toolkit-3", rank_lowering_perturbation)
    assert result.passed == (verdict is None), result.message
    assert verdict is None or verdict in result.message

# --- a function that mixes devices is told what to move ---------------------------------------------------

TORCH_MIX = ("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
             "(when checking argument for argument mat2 in method wrapper_CUDA_mm)")


def _message(label, *answer):
    result = run_check(label, *answer)
    assert not result.passed
    assert all(len(line) <= 100 for line in result.message.splitlines()), result.message
    return " ".join(result.message.split())


def test_torchs_device_mix_error_says_where_the_inputs_are_and_what_to_move(cpu_cases):
    def second_layer(contexts, queries, labels, first_layer, heads, head_dim):
        raise RuntimeError(TORCH_MIX)

    message = _message("ex-mahdavi-skip-3", second_layer)
    assert "raised RuntimeError: Expected all tensors to be on the same device" in message
    assert "the checker's inputs are on cpu (contexts.device)" in message
    assert "device=contexts.device" in message and ".to(contexts.device)" in message
    assert "apply_self_attention" not in message          # the checker's own hint is about the math, not this


def test_a_tensor_made_beside_the_inputs_on_another_device_gets_the_device_message(cpu_cases):
    """A real device mix on the CPU: a meta tensor meets the CPU inputs."""
    message = _message("ex-mahdavi-toolkit-3", lambda A: A + torch.zeros(A.shape, device="meta"))
    assert "is not on the expected device" in message
    assert "inputs are on cpu (A.device)" in message and "device=A.device" in message


def test_a_tensor_in_a_record_is_named_when_no_argument_is_a_tensor(cpu_cases):
    def permute_heads(params, perm):
        return params.W_Q + torch.zeros(1, device="meta")

    message = _message("ex-dana-aot-3", permute_heads)
    assert "inputs are on cpu (perm.device)" in message      # the tensor argument comes before the record

    def summary(kq):
        raise RuntimeError(TORCH_MIX)

    assert "device=kq.W_K.device" in _message("ex-mahdavi-rank-of-z-3", summary)


def test_a_gpu_tensor_handed_to_numpy_is_told_to_call_cpu_first(cpu_cases):
    def moment_curve(s, dim):
        return np.vander(s.to("meta").numpy(), dim, increasing=True)        # meta stands in for CUDA

    message = _message("ex-mahdavi-assumptions-3", moment_curve, 4, 10)
    assert "can't convert meta device type tensor to numpy" in message
    assert "call .cpu() before NumPy (s.cpu().numpy()" in message


def test_memcaps_device_refusal_gets_the_device_message_too(cpu_cases):
    def memorize_classes(contexts, queries, labels, classes, heads, head_dim):
        raise ValueError("labels is on cpu but the other inputs are on cuda:0; move it with .to('cuda:0')")

    message = _message("ex-mahdavi-theorem1-3", memorize_classes)
    assert "inputs are on cpu (contexts.device)" in message and "device=contexts.device" in message


def test_other_errors_keep_the_checkers_hint():
    def second_layer(contexts, queries, labels, first_layer, heads, head_dim):
        raise RuntimeError("boom")

    message = _message("ex-mahdavi-skip-3", second_layer)
    assert "apply_self_attention" in message and "device" not in message


# --- on a GPU: CUDA inputs, right answers on either device, real device mixes --------------------------------

def _forward_answers(on):
    """A right answer to ex-setting-3 that computes where its inputs are, then moves its results ``on``."""
    def shared_and_repeated(layer, context, queries):
        T, (n, d) = queries.shape[0], context.shape
        results = (models.mha_forward(layer, context, queries),
                   models.mha_forward(layer, context.expand(T, n, d), queries),
                   models.mha_attention(layer.W_K, layer.W_Q, context, queries))
        return tuple(r.to(on) for r in results)
    return shared_and_repeated


@pytest.mark.gpu
def test_on_a_gpu_right_answers_pass_on_either_device(cuda, one_thread):
    from memcap.construct import mahdavi
    from memcap.construct import mahdavi_limits as ml

    assert same_device(checking.case_device(), cuda)
    for on in ("cpu", "cuda"):
        result = run_check("ex-setting-3", _forward_answers(on))
        assert result.passed, f"results on {on}: {result.message}"

    def second_layer(contexts, queries, labels, first_layer, heads, head_dim, on="cpu"):
        assert contexts.is_cuda and first_layer.W_K.is_cuda
        contexts, queries = ml.apply_self_attention(first_layer, contexts, queries)
        return mahdavi.memorize(contexts, queries, labels, heads=heads, head_dim=head_dim).to(on)

    for on in ("cpu", "cuda"):
        result = run_check("ex-mahdavi-skip-3", lambda *a, on=on: second_layer(*a, on=on))
        assert result.passed, f"layer on {on}: {result.message}"


@pytest.mark.gpu
def test_on_a_gpu_a_cpu_tensor_beside_cuda_inputs_gets_the_device_message(cuda):
    message = _message("ex-mahdavi-toolkit-3", lambda A: A + torch.zeros(A.shape, dtype=A.dtype))
    assert "Expected all tensors to be on the same device" in message
    assert "inputs are on cuda:0 (A.device)" in message and "device=A.device" in message


@pytest.mark.gpu
def test_on_a_gpu_numpy_on_a_cuda_tensor_gets_the_device_message(cuda):
    def moment_curve(s, dim):
        return np.vander(s.numpy(), dim, increasing=True)

    message = _message("ex-mahdavi-assumptions-3", moment_curve, 4, 10)
    assert "can't convert cuda:0 device type tensor to numpy" in message
    assert "inputs are on cuda:0 (s.device)" in message and "s.cpu().numpy()" in message


@pytest.mark.gpu
def test_on_a_gpu_memcaps_refusal_of_a_device_mix_gets_the_device_message(cuda):
    from memcap.construct import mahdavi

    def memorize_classes(contexts, queries, labels, classes, heads, head_dim):
        one_hot = torch.nn.functional.one_hot(labels.cpu(), classes).double()     # moved off the inputs' device
        return mahdavi.memorize(contexts, queries, one_hot, heads=heads, head_dim=head_dim, skip=True)

    message = _message("ex-mahdavi-theorem1-3", memorize_classes)
    assert "is on cpu but" in message
    assert "inputs are on cuda:0 (contexts.device)" in message and "device=contexts.device" in message

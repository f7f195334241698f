"""The grader's wire format (``memcap.textbook._grading_wire``): answers travel as validated data, functions stay
in the kernel, and the grader's verdict equals the one ``check`` gives in the student's own notebook.

Here the "kernel" is this process: :func:`_loopback` serialises through JSON text exactly as the
grader and the kernel do, without starting one, so every checker can be tried on both ends fast.
"""
from __future__ import annotations

import json
import re

import pytest
import torch

from memcap.textbook import _grading_wire as wire
from memcap.textbook.exercises import _SUBMITTED, registry, run_check
from tests.test_exercises import SLOW_REFERENCES, WRONG, reference_answer


def _ask(name, params):
    """The kernel's end, reached through JSON text as over the wire."""
    reply = wire.export_reply(*params) if name == "export" else wire.invoke_reply(*params)
    return json.dumps(reply)


def _loopback(label, args, named=None):
    """``run_check`` in the grader on the answer the kernel exports for ``check(label, *args)``."""
    _SUBMITTED[label] = (tuple(args), named or {})
    try:
        got_args, got_named = wire.Answers(_ask).answer(label)
    finally:
        _SUBMITTED.pop(label, None)
    return run_check(label, *got_args, **got_named)


@pytest.mark.parametrize("label", [pytest.param(label, marks=pytest.mark.slow) if label in SLOW_REFERENCES
                                   else label for label in sorted(registry())])   # functions, SymPy, dicts...
def test_the_graders_verdict_on_a_reference_answer_equals_checks(label, one_thread):
    args, named = reference_answer(label)
    direct, remote = run_check(label, *args, **named), _loopback(label, args, named)
    assert remote.passed and (remote.passed, remote.message) == (direct.passed, direct.message)


WRONG_FAST = [w for w in WRONG if w[0] not in SLOW_REFERENCES]     # those build models: seconds each


@pytest.mark.parametrize("label, answer, fragment", WRONG_FAST, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG_FAST)])
def test_wrong_answers_get_the_same_message_through_the_grader(label, answer, fragment, one_thread):
    args = answer()
    direct, remote = run_check(label, *args), _loopback(label, args)
    assert not remote.passed and remote.message == direct.message


def test_values_round_trip_with_their_types():
    import numpy as np
    import sympy as sp

    from memcap.models import init_mha

    lam = sp.Symbol("lambda", positive=True)
    value = [1, -2.5, float("nan"), float("inf"), True, None, "text", (1, 2), {3: "a", (1, 2): [4]},
             {1, 2}, torch.arange(6, dtype=torch.float64).reshape(2, 3), torch.tensor([True, False]),
             np.arange(4, dtype=np.int32), np.float64(0.25), 1 + 2j, sp.sqrt(2) * lam ** 2 / 3 + sp.pi,
             init_mha(2, 3, 3, 1, 1, generator=torch.Generator().manual_seed(0))]
    back = wire.decode(json.loads(json.dumps(wire.encode(value))))
    for a, b in zip(value, back):
        assert type(a) is type(b), (a, b)
    assert back[2] != back[2] and back[3] == float("inf")
    assert back[8] == {3: "a", (1, 2): [4]} and back[9] == {1, 2}
    assert torch.equal(back[10], value[10]) and back[10].dtype == torch.float64
    assert back[12].dtype == np.int32 and back[13] == 0.25 and back[14] == 1 + 2j
    assert sp.simplify(back[15] - value[15]) == 0 and back[15].free_symbols == {lam}
    assert all(torch.equal(x, y) for x, y in zip(back[16].parameters(), value[16].parameters()))


class Opaque:
    pass


@pytest.mark.parametrize("payload, reason", [
    ({"$": "tensor", "dtype": "float64", "shape": [2, 2], "data": [1.0, 2.0, 3.0]}, "prod(shape)"),
    ({"$": "tensor", "dtype": "object", "shape": [1], "data": [1]}, "unknown dtype"),
    ({"$": "tensor", "dtype": "float64", "shape": [-1], "data": []}, "shape"),
    ({"$": "tensor", "dtype": "int64", "shape": [1], "data": [1.5]}, "integers"),
    ({"$": "record", "type": "os.system", "fields": {"command": "true"}}, "answers hold, not 'os.system'"),
    ({"$": "record", "type": "memcap.textbook.grading.Limits", "fields": {}},
     "answers hold, not 'memcap.textbook.grading"),
    ({"$": "record", "type": "memcap.models.mha_forward", "fields": {}}, "not a memcap dataclass"),
    ({"$": "record", "type": "memcap.models.MHAParams", "fields": {"bogus": 1}}, "no field 'bogus'"),
    ({"$": "sympy", "node": "Function", "args": []}, "not accepted"),
    ({"$": "pickle", "data": "gASVAAAA"}, "unknown kind"),
    ({"$": "dict", "items": [[1]]}, "[key, value] pairs"),
    ({"no": "tag"}, "unexpected dict"),
    (json.loads("[" * 80 + "0" + "]" * 80), "nested"),
])
def test_malformed_values_are_refused_with_a_reason(payload, reason):
    with pytest.raises(wire.WireError, match=re.escape(reason)):
        wire.decode(payload)


def test_what_the_format_does_not_carry_arrives_as_a_placeholder():
    back = wire.decode(json.loads(json.dumps(wire.encode([Opaque(), lambda: 1]))))
    assert all(isinstance(v, wire.Unsupported) for v in back)
    result = run_check("ex-mahdavi-tightness-3", back[0])
    assert not result.passed and "should be a function" in result.message


@pytest.mark.parametrize("reply, error, reason", [
    ("not json {", wire.GradingStopped, "not JSON"),
    ("[1, 2]", wire.GradingStopped, "not a JSON object"),
    ('{"answer": {"args": 3, "named": {}}}', wire.WireError, "list of arguments"),
    ('{"malformed": "too deep"}', wire.WireError, "too deep"),
    ('{"missing": true}', wire.NoAnswer, "ex-"),
])
def test_malformed_replies_fail_the_exercise_with_a_reason(reply, error, reason):
    with pytest.raises(error, match=re.escape(reason)):
        wire.Answers(lambda name, params: reply).answer("ex-mahdavi-skip-2")


def test_a_function_runs_in_the_kernel_and_its_exceptions_keep_their_names():
    calls = []

    def student(x, scale=1):
        calls.append(x)
        if scale == 0:
            raise ZeroDivisionError("scale 0")
        x.mul_(scale)                               # in place, as a careless answer might
        return {"sum": float(x.sum())}

    _SUBMITTED["ex-x"] = ((student,), {})
    try:
        (remote,), _ = wire.Answers(_ask).answer("ex-x")
        mine = torch.ones(3)
        assert remote(mine, scale=2) == {"sum": 6.0}
        assert torch.equal(mine, torch.full((3,), 2.0)), "the change in place reaches the grader's tensor"
        assert calls[0] is not mine                     # the kernel worked on its own copy
        with pytest.raises(Exception) as raised:
            remote(mine, scale=0)
        assert type(raised.value).__name__ == "ZeroDivisionError" and "scale 0" in str(raised.value)
        assert isinstance(raised.value, wire.RemoteError)
    finally:
        _SUBMITTED.pop("ex-x", None)


def test_a_kernel_that_stops_answering_is_not_taken_for_the_students_exception():
    def silent(name, params):
        raise wire.GradingStopped("the kernel did not answer within 1 s")

    function = wire.RemoteFunction(0, "f", wire.Answers(silent).call)
    with pytest.raises(wire.GradingStopped):
        try:
            function(1)
        except Exception:        # what a checker that expects a refusal catches
            pytest.fail("a stopped kernel looked like a refusal by the student's function")

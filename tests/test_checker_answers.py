"""Every exercise checker, fed malformed versions of its reference answer, says what is wrong with the answer.

The malformed answers are generated, not listed: starting from each checker's reference answer (read out of
its chapter by :func:`tests.test_exercises.reference_answer`), :func:`variants` walks the answer's structure
(each argument, and the first entry of each list, tuple and dict inside it, :func:`_nodes`) and makes, at
every place it visits:

* one container too many: the value in a list of one (a tensor with an extra leading dimension);
* NaN, then an infinity, in a number or in one entry of a tensor;
* a wrong length: a list, tuple, dict or tensor with its last entry dropped, or one entry more;
* a wrong type: a string, None, a dict in place of the value;

and, for an answer that is a function, functions whose output is all NaN, gets an extra leading dimension
(or is put in a list of one), or is None. Each must be refused (never passed), never with the catch-all
"could not be checked", and with a message that names the problem (:data:`NAN`, :data:`NESTED`, ...,
the expected type from :func:`_type_words`), in lines that fit a notebook's output.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import sympy as sp
import torch

from memcap.textbook.exercises import registry, run_check
from memcap.textbook.exercises.checking import tensor_answer
from tests.test_exercises import SLOW_REFERENCES, reference_answer

CHECKED = registry()

NAN = r"\bNaN\b"
INF = r"\binf\b"
NESTED = r"\blist of one\b|\btuple of one\b|\bleading dimension\b"
LENGTH = r"\bentr(y|ies)\b|\bkeys\b"
SHAPE = r"\bshape\b"
CATCH_ALL = "could not be checked"
WRONG_TYPES = (("a string", "not an answer", r"\bstr\b|not an answer"),
               ("None", None, r"\bNone(Type)?\b"),
               ("a dict", {"a": 1}, r"\bdict\b|\{'a': 1\}|keys \['a'\]"))
"""The values put in place of a part of the answer: (description, value, how a message names it)."""


@dataclass(frozen=True)
class Variant:
    """A malformed answer: what was done to the reference answer, the arguments, and the patterns (regular
    expressions) that the message must all match."""

    description: str
    args: tuple
    named: dict
    patterns: tuple[str, ...]


# --- the reference answers, and what their functions return ------------------------------------------------

def _is_function(value: Any) -> bool:
    return inspect.isfunction(value) or isinstance(value, functools.partial)


@functools.cache
def _reference(label: str) -> tuple[tuple, dict, dict]:
    """The reference answer of ``label`` and, for each function in it (by its path), one value it returned
    while the checker passed it (None-returning functions: None)."""
    args, named = reference_answer(label)
    returns: dict[tuple, list] = {}

    def recording(path, function):
        @functools.wraps(function)
        def recorded(*a, **k):
            result = function(*a, **k)
            returns.setdefault(path, []).append(result)
            return result
        return recorded

    spied = _map_functions((args, named), (), recording)
    result = run_check(label, *spied[0], **spied[1])
    assert result.passed, f"the reference answer of {label} does not pass:\n{result.message}"
    return args, named, returns


def _map_functions(value: Any, path: tuple, change) -> Any:
    """``value`` with each function ``f`` at ``path`` (inside lists, tuples, dicts) replaced by ``change(path, f)``."""
    if _is_function(value):
        return change(path, value)
    if type(value) in (list, tuple):
        return type(value)(_map_functions(v, (*path, k), change) for k, v in enumerate(value))
    if type(value) is dict:
        return {k: _map_functions(v, (*path, k), change) for k, v in value.items()}
    return value


# --- walking an answer ---------------------------------------------------------------------------------------

def _nodes(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """The places the variants change: ``value`` and, recursively, the first entry of its lists, tuples and
    dicts (as (path, value); a path is a tuple of indices and keys)."""
    found = [(path, value)]
    if type(value) in (list, tuple) and value:
        found += _nodes(value[0], (*path, 0))
    elif type(value) is dict and value:
        key = next(iter(value))
        found += _nodes(value[key], (*path, key))
    return found


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    """A copy of ``value`` with the part at ``path`` replaced by ``new`` (the containers on the way copied)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if type(value) is dict:
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    items = list(value)
    items[head] = _replaced(items[head], rest, new)
    return type(value)(items)


def _shown(path: tuple) -> str:
    return "".join(f"[{k!r}]" for k in path)


def _is_number(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_, sp.Basic))


def _is_float_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel() > 0


def _type_words(value: Any) -> str:
    """How a message names the type the reference ``value`` has (what the answer should be)."""
    if isinstance(value, (bool, np.bool_)):
        return r"True or False|\bbool\b"
    if _is_number(value):
        return r"\bnumbers?\b"
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return r"\btensor\b|\bvector\b|\bnumbers?\b|\barray\b"
    if _is_function(value):
        return r"\bfunction\b"
    if isinstance(value, dict):
        return r"\bdict\b"
    if isinstance(value, (list, tuple)):
        return r"\blist\b|\btuple\b|\bpair\b|\btriple\b"
    if isinstance(value, sp.Basic):
        return r"SymPy"
    if isinstance(value, str):
        return r"\bstrings?\b|\bnames?\b"
    return rf"\b{type(value).__name__}\b"


def _extra_key(keys: list) -> Any:
    numeric = [k for k in keys if _is_number(k)]
    return max(numeric) + 1 if numeric else "extra"


def _value_variants(path: tuple, value: Any) -> list[tuple[str, Any, tuple[str, ...]]]:
    """(what was done, the new value, patterns) for the part ``value`` of an answer."""
    made: list[tuple[str, Any, tuple[str, ...]]] = []
    if isinstance(value, torch.Tensor) and value.dim() >= 2:     # a vector as a row is right (tensor_answer)
        made.append(("with an extra leading dimension", value[None], (NESTED,)))
    made.append(("in a list of one", [value], (NESTED,)))
    if _is_number(value):
        made += [("NaN", math.nan, (NAN,)), ("inf", math.inf, (INF,))]
    if _is_float_tensor(value):
        for kind, x, pattern in (("NaN", math.nan, NAN), ("inf", math.inf, INF)):
            spoilt = value.detach().clone()
            spoilt.view(-1)[spoilt.numel() // 2 if kind == "NaN" else 0] = x
            made.append((f"{kind} in one entry", spoilt, (pattern,)))
    if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] >= 2:
        made += [("its last row dropped", value[:-1], (f"{SHAPE}|{LENGTH}",)),
                 ("a row added", torch.cat([value, value[-1:]]), (f"{SHAPE}|{LENGTH}",))]
    if type(value) in (list, tuple) and value:
        made += [("its last entry dropped", type(value)(value[:-1]), (LENGTH,)),
                 ("an entry added", type(value)([*value, value[-1]]), (LENGTH,))]
    if type(value) is dict and value:
        keys = list(value)
        made += [("its first key dropped", {k: v for k, v in value.items() if k != keys[0]}, (LENGTH,)),
                 ("a key added", {**value, _extra_key(keys): value[keys[-1]]}, (LENGTH,))]
    for description, wrong, given in WRONG_TYPES:
        if type(wrong) is not type(value):
            expected = _type_words(value)
            if isinstance(wrong, dict):     # where a dict is a right type too, its keys are wrong
                expected += r"|\bentry for each of\b"
            made.append((f"replaced by {description}", wrong, (expected, given)))
    return made


# --- functions that return malformed results -----------------------------------------------------------------

def _all_nan(value: Any) -> Any:
    """``value`` with every number NaN: numbers and verdicts, float tensors, inside lists, tuples, dicts and
    records (dataclasses); other values unchanged."""
    if isinstance(value, (bool, np.bool_)) or _is_number(value):
        return math.nan
    if isinstance(value, torch.Tensor):
        return torch.full(value.shape, math.nan, dtype=torch.float64 if not value.is_floating_point()
                          else value.dtype, device=value.device)
    if type(value) in (list, tuple):
        return type(value)(_all_nan(v) for v in value)
    if type(value) is dict:
        return {k: _all_nan(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        record = copy.copy(value)
        for field in dataclasses.fields(value):
            object.__setattr__(record, field.name, _all_nan(getattr(value, field.name)))
        return record
    return value


def _with_extra_dimension(value: Any) -> Any:
    return value[None] if isinstance(value, torch.Tensor) else [value]


def _function_variants(function: Any, returned: list) -> list[tuple[str, Any, tuple[str, ...]]]:
    """Functions like ``function`` whose results are malformed, given what ``function`` returned."""
    def returning(change):
        @functools.wraps(function)
        def malformed(*args, **kwargs):
            return change(function(*args, **kwargs))
        return malformed

    first = returned[0] if returned else None
    made = [("a function whose output gets an extra leading dimension", returning(_with_extra_dimension),
             (NESTED,))]
    if any(_non_nan_changes(r) for r in returned):
        made.append(("a function whose output is all NaN", returning(_all_nan), (NAN,)))
    if returned and not any(r is None for r in returned):
        made.append(("a function that returns None", returning(lambda result: None),
                     (_type_words(first), r"\bNone(Type)?\b")))
    return made


def _non_nan_changes(value: Any) -> bool:
    """Whether :func:`_all_nan` changes ``value`` (it holds a number)."""
    if isinstance(value, (bool, np.bool_)) or _is_number(value) or isinstance(value, torch.Tensor):
        return True
    if type(value) in (list, tuple):
        return any(_non_nan_changes(v) for v in value)
    if type(value) is dict:
        return any(_non_nan_changes(v) for v in value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_non_nan_changes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


# --- all the variants of one checker's answer ---------------------------------------------------------------

def variants(label: str) -> list[Variant]:
    """The malformed answers generated from ``label``'s reference answer."""
    args, named, returns = _reference(label)
    names = list(inspect.signature(CHECKED[label].function).parameters)
    roots = [(names[k], (k,), v) for k, v in enumerate(args)] + [(k, (k,), v) for k, v in named.items()]
    made = []
    for name, root, value in roots:
        for path, part in _nodes(value):
            changes = _value_variants(path, part)
            if _is_function(part):
                changes += _function_variants(part, returns.get((0 if isinstance(root[0], int) else 1,
                                                                 *root, *path), []))
            for description, new, patterns in changes:
                where = f"{name}{_shown(path)}"
                given_args, given_named = list(args), dict(named)
                if isinstance(root[0], int):
                    given_args[root[0]] = _replaced(value, path, new)
                else:
                    given_named[root[0]] = _replaced(value, path, new)
                made.append(Variant(f"{where}: {description}", tuple(given_args), given_named, patterns))
    return made


def _problem(label: str, variant: Variant) -> str | None:
    """What is wrong with the verdict on ``variant`` (None: refused with a message naming the problem)."""
    result = run_check(label, *variant.args, **variant.named)
    text = " ".join(result.message.split())
    if result.passed:
        return f"{variant.description}: passed"
    if CATCH_ALL in text:
        return f"{variant.description}: the catch-all: {text}"
    missing = [p for p in variant.patterns if not re.search(p, text)]
    if missing:
        return f"{variant.description}: the message does not match {missing}: {text}"
    if any(len(line) > 100 for line in result.message.splitlines()):
        return f"{variant.description}: a line of the message is longer than 100 characters: {result.message}"
    return None


@pytest.mark.parametrize("label", [pytest.param(label, marks=pytest.mark.slow) if label in SLOW_REFERENCES
                                   else label for label in sorted(CHECKED)])
def test_every_malformed_answer_is_refused_with_a_message_naming_the_problem(label, one_thread):
    made = variants(label)
    assert len(made) >= 4, f"{label}: only {len(made)} variants"
    problems = [p for v in made if (p := _problem(label, v)) is not None]
    assert not problems, f"{label}: {len(problems)} of {len(made)} malformed answers:\n" + "\n".join(problems)


# --- the intake's messages, on answers of each kind ------------------------------------------------------------

def test_a_nan_in_a_value_is_named_where_it_is():
    message = run_check("ex-mahdavi-theorem1-2", {8: 0.1, 16: math.nan, 32: 0.2, 64: 0.1}, 32).message
    assert message.startswith("your answer ratios holds NaN at ratios[16]"), message
    assert run_check("ex-dana-se-2", -math.inf).message.startswith("your answer lam is -inf"), message


def test_a_function_returning_nan_is_told_where_in_its_result():
    def shift_to_zero_sum(contexts):
        shifted = contexts - 1 / contexts.shape[-1]
        shifted[2, 0, 1] = math.nan
        return shifted

    message = " ".join(run_check("ex-mahdavi-tightness-3", shift_to_zero_sum).message.split())
    assert "your function shift_to_zero_sum returned NaN at [2, 0, 1]" in message, message
    assert "could not be checked" not in message


def test_a_list_of_one_is_named_only_when_the_value_itself_is_right():
    args, _, _ = _reference("ex-dana-rw-2")
    assert "your answer width is a list of one" in run_check("ex-dana-rw-2", [args[0]]).message
    wrong = run_check("ex-setting-2", [323], {64: 1, 16: 1}).message     # not nested: too short
    assert "should have 2 entries" in wrong and "list of one" not in wrong, wrong


def test_a_tensor_with_an_extra_leading_dimension_is_told_so():
    with pytest.raises(Exception, match="extra leading dimension of size 1"):
        tensor_answer(torch.zeros(1, 2, 3, dtype=torch.float64), (2, 3), "the answer")
    with pytest.raises(Exception, match=r"holds inf at index \[1, 0\]"):
        tensor_answer([[0.0, 1.0], [math.inf, 0.0]], (2, 2), "the answer")

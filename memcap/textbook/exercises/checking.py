"""The machinery behind ``check("ex-...", answer)``: the registry, the result, and helpers for checkers.

A *checker* is a small function registered under an exercise's label with :func:`checker`. It receives
the student's answer (the arguments of ``check`` after the label), tests it, and either returns (the
answer is right) or raises :class:`Failure` through the helpers :func:`fail`, :func:`expect` and
:func:`close`, which say what is wrong, in which case, what was expected and what was given, with a
hint. Its docstring's first line says what it tests; the book's exercise index and the grading
report show it. Where an exercise admits many right answers, a checker tests properties of the
answer (the shifted tokens sum to zero, the returned layer reproduces the labels), not one value.

Messages never print solution code. For a *numeric* answer they do not print the expected number
either, since that number is the answer: they say whether the given value is too large or too small,
and by what factor. For a *function* answer they print the failing case, the expected property and
what the function gave. A message never shows "expected" and "got" that read the same (:func:`fail`
then adds their types, or more digits).

A right answer is right in every natural type (:func:`run_check` and :func:`tensor_answer`): NumPy
arrays and scalars (``numpy.bool_`` verdicts, ``numpy.int64`` counts) are read as tensors and Python
numbers, also inside dicts, lists and tuples and in what an answer function returns; where a checker
expects a tensor, a nested list is accepted, and a column or a row where it expects a vector.

A right answer is right on every device. A checker builds its cases on the CPU (CPU generators, so a
seed gives the same numbers everywhere) and computes its references there; the student's function gets
copies on :func:`case_device`, the device the chapter's tensors are on (:func:`to_case_device`), and
what it returns is compared where the reference is (:func:`tensor_answer` and :func:`on_device` move
it there). A function that fails because it mixes devices (a tensor made on the CPU beside CUDA
inputs, a CUDA tensor handed to NumPy) is told which device its inputs are on and what to move
(:func:`call`).

What is wrong with the *form* of an answer is said before anything is computed from it, in words about
the answer (:func:`run_check`): a NaN or an infinity in a value (``ratios holds NaN at ratios[16]``) or in
what an answer function returns (``your function returned inf at [2, 0]``), an answer wrapped in one
container too many (``width is a list of one``: said when the answer without its lists of one passes),
a wrong length (:func:`numbers_by_key`, :func:`entries`), shape (:func:`tensor_answer`) or type
(:func:`number`, :func:`call`). The catch-all "could not be checked" is left for bugs in a checker.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import math
import numbers
import re
import sys
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, NoReturn, Sequence

__all__ = ["Checker", "Failure", "Result", "call", "case", "case_device", "checker", "close", "entries", "expect",
           "fail", "number", "numbers_by_key", "on_device", "registry", "run_check", "tensor_answer",
           "to_case_device", "whole_number"]

_REGISTRY: dict[str, "Checker"] = {}


@dataclass(frozen=True)
class Checker:
    """One exercise's checker: its label, its chapter (``book/mahdavi/tightness``) and the function."""

    label: str
    chapter: str
    function: Callable[..., None]

    @property
    def summary(self) -> str:
        """What the checker tests: the first paragraph of its docstring, on one line."""
        doc = inspect.getdoc(self.function) or ""
        return " ".join(doc.split("\n\n")[0].split())

    @property
    def call(self) -> str:
        """How students call it, e.g. ``check("ex-mahdavi-skip-3", second_layer)``."""
        names = [p.name if p.kind is not p.KEYWORD_ONLY else f"{p.name}=..."
                 for p in inspect.signature(self.function).parameters.values()]
        return f'check("{self.label}", {", ".join(names)})'


class Failure(Exception):
    """Raised inside a checker when the answer is wrong; ``str()`` is the message for the student."""


@dataclass(frozen=True)
class Result:
    """The verdict on one answer: ``passed``, and the message (``"passed (3 cases)"`` or what is wrong).

    True in a boolean context exactly when the answer passed, so a solution can ``assert check(...)``.
    """

    label: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = f"{self.label}: {'passed' if self.passed else 'not yet right'}"
        return f"{head} ({self.message})" if self.passed else f"{head}\n{self.message}"


def checker(label: str, chapter: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register the decorated function as the checker of exercise ``label`` of ``chapter``.

    The function's parameters are what students pass after the label; its docstring says what it
    tests (required). A label can have one checker only.
    """
    if not isinstance(label, str) or not label.startswith("ex-"):
        raise ValueError(f"label must be an exercise label starting with 'ex-', got {label!r}")
    if not isinstance(chapter, str) or not chapter.startswith("book/"):
        raise ValueError(f"chapter must be a document path such as 'book/setting', got {chapter!r}")

    def register(function: Callable[..., None]) -> Callable[..., None]:
        if not inspect.getdoc(function):
            raise ValueError(f"the checker of {label} needs a docstring saying what it tests")
        if label in _REGISTRY:
            raise ValueError(f"{label} already has a checker ({_REGISTRY[label].function.__module__})")
        _REGISTRY[label] = Checker(label, chapter, function)
        return function

    return register


def registry() -> dict[str, Checker]:
    """Every registered checker, by label (the chapter modules of :mod:`memcap.textbook.exercises` loaded)."""
    from memcap.textbook.exercises import _load_chapters

    _load_chapters()
    return dict(_REGISTRY)


# --- devices: where the student's function meets its inputs ---------------------------------------

def case_device() -> Any:
    """The device a student's function gets the checker's cases on: the chapter's default device.

    That is :func:`memcap.device.pick_device` (CUDA where present; ``MEMCAP_DEVICE`` overrides), where
    the chapter's own tensors are, so that a function written for the chapter meets its inputs where
    it will meet them there. On MPS, which has no float64 (the cases are float64), it is the CPU.
    """
    import torch

    from memcap.device import pick_device

    device = pick_device()
    return torch.device("cpu") if device.type == "mps" else device


def _moved(value: Any, device: Any, copy_tensors: bool) -> Any:
    """``value`` with its tensors on ``device``: a tensor, a record of tensors (a dataclass such as
    MHAParams, AoTParams, KeyQueryConstruction), a list, tuple or dict of them; anything else unchanged."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device=device, copy=copy_tensors)
    if type(value) in (list, tuple):
        return type(value)(_moved(v, device, copy_tensors) for v in value)
    if type(value) is dict:
        return {k: _moved(v, device, copy_tensors) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        changed = {name: _moved(v, device, copy_tensors) for name, v in fields.items()}
        if all(changed[name] is fields[name] for name in fields):
            return value
        record = copy.copy(value)       # moving changes no value: the record's checks need not run again
        for name, v in changed.items():
            object.__setattr__(record, name, v)
        return record
    return value


def to_case_device(*values: Any) -> Any:
    """Copies of the checker's inputs ``values`` on :func:`case_device`, to hand to a student's function.

    Tensors and records of tensors (MHAParams, AoTParams, KeyQueryConstruction, lists of tensors) are
    copied there, so that the function can change its inputs without changing the checker's; other
    values are passed as they are. One value gives one value back, several a tuple.
    """
    device = case_device()
    moved = tuple(_moved(v, device, True) for v in values)
    return moved[0] if len(moved) == 1 else moved


def on_device(value: Any, device: Any) -> Any:
    """What a student's function returned, moved to ``device`` (where the checker's reference is):
    tensors and records of tensors as in :func:`to_case_device`, other values unchanged."""
    import torch

    return _moved(value, torch.device(device), False)


_DEVICE_MIX = re.compile(r"same device|expected device|device type|is on \S+ but|Tensor\.cpu\(\)"
                         r"|torch\.cuda\.\w*Tensor", re.IGNORECASE)
"""What torch ("Expected all tensors to be on the same device", "can't convert cuda:0 device type tensor
to numpy") and memcap ("contexts is on cpu but the other inputs are on cuda:0") say about a device mix."""


def _first_tensor(value: Any, where: str, depth: int) -> tuple[Any, str] | None:
    """The first tensor in ``value``, at most ``depth`` containers deep, and how to name it (``contexts``,
    ``layer.W_K``), or None."""
    import torch

    if isinstance(value, torch.Tensor):
        return value, where
    if depth <= 0:
        return None
    if type(value) in (list, tuple):
        items = [(v, f"{where}[{k}]") for k, v in enumerate(value)]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(getattr(value, f.name), f"{where}.{f.name}") for f in dataclasses.fields(value)]
    else:
        return None
    for item, name in items:
        found = _first_tensor(item, name, depth - 1)
        if found is not None:
            return found
    return None


def _device_hint(err: Exception, function: Any, args: tuple, kwargs: dict) -> str | None:
    """What to move, when ``err`` says that ``function`` mixed devices; None for other errors."""
    text = f"{type(err).__name__}: {err}"
    if not _DEVICE_MIX.search(text):
        return None
    try:
        named = list(inspect.signature(function).bind(*args, **kwargs).arguments.items())
    except (TypeError, ValueError):      # no signature, or one that does not take these arguments
        named = [("x", v) for v in (*args, *kwargs.values())]
    found = next((f for depth in (0, 3) for name, v in named            # a tensor argument, else one in a record
                  if (f := _first_tensor(v, name, depth)) is not None), None)
    if found is None:
        where, x = "the checker's inputs hold no tensors: keep the tensors your function makes on one device", "x"
    else:
        tensor, x = found
        where = f"the checker's inputs are on {tensor.device} ({x}.device), where the chapter's tensors are"
    if "numpy" in text.lower():
        return (f"{where}; NumPy reads CPU tensors only: call .cpu() before NumPy ({x}.cpu().numpy(), "
                f"np.asarray({x}.cpu())), or stay in torch")
    return (f"{where}; create new tensors there with device={x}.device (or torch.zeros_like, "
            f"{x}.new_zeros), and move other tensors with .to({x}.device)")


# --- the helpers a checker uses -------------------------------------------------------------------

_current_case: list[str] = []
_cases_seen: list[str] = []


@contextmanager
def case(description: str) -> Iterator[None]:
    """Run a block as one named case: a failure inside it says ``in case k (description)``."""
    _cases_seen.append(description)
    _current_case.append(f"case {len(_cases_seen)} ({description})")
    try:
        yield
    finally:
        _current_case.pop()


def _show(value: Any) -> str:
    try:
        import torch

        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().tolist() if value.numel() <= 12 else \
                f"tensor of shape {tuple(value.shape)}"
    except ImportError:  # pragma: no cover - torch is a dependency of memcap
        pass
    if isinstance(value, float):
        return f"{value:.6g}"
    text = repr(value)
    return text if len(text) <= 70 else text[:67] + "..."


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=79, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


class _NotGiven:
    """The default of ``expected`` and ``got``: nothing to print (None is a value a student may give)."""

    def __repr__(self) -> str:
        return "not given"


_NOT_GIVEN: Any = _NotGiven()


def _shown(expected: Any, got: Any) -> tuple[str, str]:
    """How ``expected`` and ``got`` are printed; never the same text for both (a student who reads
    "expected: True / got: True" learns nothing): their types are added, then full precision."""
    texts = [v if isinstance(v, str) else _show(v) for v in (expected, got)]
    if expected is _NOT_GIVEN or got is _NOT_GIVEN or texts[0] != texts[1]:
        return texts[0], texts[1]
    kinds = [type(v).__name__ for v in (expected, got)]
    if kinds[0] != kinds[1]:
        return f"{texts[0]} ({kinds[0]})", f"{texts[1]} ({kinds[1]})"
    full = [repr(v) for v in (expected, got)]
    if full[0] != full[1]:
        return full[0][:200], full[1][:200]
    return texts[0], f"{texts[1]} (the same value, judged wrong for the reason above)"


def fail(what: str, *, expected: Any = _NOT_GIVEN, got: Any = _NOT_GIVEN, hint: str | None = None) -> NoReturn:
    """Stop the check: the answer is wrong because of ``what``.

    ``expected`` and ``got`` are printed when given (``expected`` may be a sentence describing a
    property; None is printed as None), never as the same text; ``hint`` says how to get it right
    without giving the solution.
    """
    raise Failure(_failure_text(what, expected, got, hint))


def _failure_text(what: str, expected: Any = _NOT_GIVEN, got: Any = _NOT_GIVEN, hint: str | None = None) -> str:
    """The message of :func:`fail`: the case, what is wrong, what was expected and given, the hint."""
    where = f"in {_current_case[-1]}: " if _current_case else ""
    lines = [_wrap(f"{where}{what}")]
    shown_expected, shown_got = _shown(expected, got)
    if expected is not _NOT_GIVEN:
        lines.append(f"  expected: {shown_expected}")
    if got is not _NOT_GIVEN:
        lines.append(f"  got:      {shown_got}")
    if hint:
        lines.append(_wrap(f"hint: {hint}"))
    return "\n".join(lines)


def expect(condition: bool, what: str, *, expected: Any = _NOT_GIVEN, got: Any = _NOT_GIVEN,
           hint: str | None = None) -> None:
    """:func:`fail` with the same arguments unless ``condition`` holds."""
    if not condition:
        fail(what, expected=expected, got=got, hint=hint)


def number(value: Any, what: str, *, hint: str | None = None) -> float:
    """The student's ``value`` as a float, or a failure saying that ``what`` should be a number and what it is.

    A Python or NumPy number, a one-element tensor or a numeric string is a number; a bool is not (a
    verdict where a count is expected). NaN and infinities are read as they are (:func:`close` refuses
    them).
    """
    if isinstance(value, bool):
        fail(f"{what} should be a number, not a bool", got=value, hint=hint)
    if isinstance(value, numbers.Real):
        return float(value)
    try:
        import torch

        if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex() \
                and value.dtype != torch.bool:
            return float(value.item())
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    fail(f"{what} should be a number", got=f"{type(value).__name__} {_show(value)}", hint=hint)


def whole_number(value: Any, what: str, *, hint: str | None = None) -> int:
    """The student's ``value`` as an int, or a failure saying that ``what`` should be a whole number.

    Any number :func:`number` reads whose value is an integer counts: ``1386``, ``np.int64(1386)``,
    ``1386.0`` (from ``np.floor(...) + 1``) or a one-element tensor; ``1386.5`` and a bool do not.
    """
    value = number(value, what, hint=hint)
    if not (math.isfinite(value) and value.is_integer()):
        # in full: 20.99999 shown to 6 digits would read "got: 21"
        fail(f"{what} should be a whole number", got=repr(value), hint=hint)
    return int(value)


def _kind(x: Any) -> str:
    """How a number that is not finite is named: ``NaN``, ``inf`` or ``-inf``."""
    x = complex(x)
    if math.isnan(x.real) or math.isnan(x.imag):
        return "NaN"
    return "-inf" if x.real < 0 and not math.isinf(x.imag) else "inf"


def _non_finite(value: Any, where: str = "", *, records: bool = False,
                depth: int = 4) -> tuple[str, str, int] | None:
    """The first number in ``value`` that is NaN or infinite: (``"NaN"``/``"inf"``/``"-inf"``, where it is,
    how many entries of its tensor are not finite), or None.

    ``where`` is a subscript after the answer's name (``[16]``, ``[0][2, 1]``, ``.W_K[0, 3, 1]``); lists,
    tuples and dicts are searched, ``depth`` containers deep, and with ``records`` the fields of records
    (dataclasses: the weights a function returns). Tensors on the ``meta`` device hold no values.
    """
    import torch

    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Number):
        try:
            x = complex(value)
        except (TypeError, ValueError, OverflowError):      # a SymPy number with free symbols, a huge int
            return None
        return None if math.isfinite(x.real) and math.isfinite(x.imag) else (_kind(x), where, 1)
    if isinstance(value, torch.Tensor):
        if value.is_meta or not (value.is_floating_point() or value.is_complex()):
            return None
        bad = ~torch.isfinite(value.detach())
        count = int(bad.sum())
        if not count:
            return None
        index = tuple(int(k) for k in bad.nonzero()[0])
        at = f"[{', '.join(map(str, index))}]" if index else ""
        return _kind(value.detach()[index].item()), where + at, count
    if depth <= 0:
        return None
    if type(value) in (list, tuple):
        items = [(v, f"{where}[{k}]") for k, v in enumerate(value)]
    elif type(value) is dict:
        items = [(v, f"{where}[{k!r}]") for k, v in value.items()]
    elif records and dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(getattr(value, f.name), f"{where}.{f.name}") for f in dataclasses.fields(value)]
    else:
        return None
    for item, at in items:
        found = _non_finite(item, at, records=records, depth=depth - 1)
        if found is not None:
            return found
    return None


def _non_finite_words(found: tuple[str, str, int], subject: str, whole: str) -> tuple[str, str]:
    """The sentence saying that ``subject`` holds what :func:`_non_finite` ``found``, and a hint."""
    kind, where, count = found
    more = f" (and {count - 1} more entr{'ies' if count > 2 else 'y'} not finite)" if count > 1 else ""
    what = f"{subject} {kind}" if not where else f"{subject} {kind} at {whole}{where}{more}"
    hint = ("a NaN comes from 0/0, inf - inf, or a log or square root of a negative number" if kind == "NaN"
            else "an infinity comes from a division by zero or an overflow (exp of a large number)")
    return what, f"every number of a right answer is finite; {hint}"


def close(got: Any, expected: float, what: str, *, rtol: float = 1e-6, atol: float = 0.0,
          digits: int | None = None, reveal: bool = False, hint: str | None = None) -> None:
    """The number ``got`` equals ``expected`` up to ``rtol`` (relative) or ``atol`` (absolute).

    ``digits`` (an exercise that asks for so many significant digits) also accepts ``got`` within half a
    unit of the last asked digit of ``expected`` (``digits=3``: 0.0294 for 0.029366), and so every correct
    rounding, and nothing a digit further off.
    With ``reveal=False`` (numeric answers) the message does not print ``expected``: it says whether
    ``got`` is too large or too small, and by which factor.
    """
    value = number(got, what, hint=hint)
    if digits is not None and expected:
        unit = 10.0 ** (math.floor(math.log10(abs(expected))) - digits + 1)
        atol = max(atol, 0.5 * unit * (1 + 1e-9))
    if math.isfinite(value) and abs(value - expected) <= max(atol, rtol * abs(expected)):
        return
    if not math.isfinite(value):           # never the expected number: a NaN tells nothing about the value
        fail(f"{what} is {_kind(value)}, not a finite number", got=value,
             hint=_non_finite_words((_kind(value), "", 1), "", "")[1])
    if reveal:
        fail(f"{what} is not right", expected=expected, got=value, hint=hint)
    if expected and value and value / expected > 0:
        factor = max(value / expected, expected / value)
        direction = "large" if abs(value) > abs(expected) else "small"
        if factor < 1.1:   # "about 1 times too small" would say nothing: give the relative gap
            side = f"slightly too {direction} (off by {100 * abs(value / expected - 1):.2g} %)"
        else:
            amount = f"{factor:.3g}" if factor < 1000 else f"{factor:,.0f}"
            side = f"about {amount} times too {direction}"
    else:
        side = "too large" if value > expected else "too small"
    fail(f"{what} is {side}", got=value, hint=hint)


def tensor_answer(value: Any, shape: Sequence[int], what: str, *, device: Any = None,
                  hint: str | None = None) -> Any:
    """The student's ``value`` as a float64 tensor of ``shape`` on ``device``, or a failure saying what is wrong.

    A tensor (on any device), a NumPy array or a nested list of numbers is accepted; where ``shape`` is a
    vector ``(n,)``, a column ``(n, 1)`` or a row ``(1, n)`` is too (and a vector where a column is
    expected). ``device`` is where the reference it is compared with lives (None: the CPU, where the
    checkers build their cases), so that the comparison never mixes devices.
    """
    import torch

    target = torch.device("cpu") if device is None else torch.device(device)
    shape = tuple(int(k) for k in shape)
    given = value
    if not isinstance(value, torch.Tensor):
        try:
            value = torch.as_tensor(_natural(value), dtype=torch.float64, device=target)
        except (TypeError, ValueError, RuntimeError):
            fail(f"{what} should be a tensor of shape {shape} (a torch.Tensor, NumPy array or nested list "
                 f"of numbers)", got=type(given).__name__, hint=hint)
    if value.is_complex() or value.dtype == torch.bool:
        fail(f"{what} should hold real numbers", got=f"dtype {value.dtype}", hint=hint)
    vector_like = len(shape) == 1 or (len(shape) == 2 and 1 in shape)
    if tuple(value.shape) != shape and vector_like and value.numel() == math.prod(shape) \
            and sum(k != 1 for k in value.shape) <= 1:
        value = value.reshape(shape)
    if tuple(value.shape) != shape:
        if tuple(value.shape) == (1, *shape):
            fail(f"{what} has an extra leading dimension of size 1 (a list of one?): give the tensor "
                 f"itself, of shape {shape}", expected=shape, got=tuple(value.shape), hint=hint)
        fail(f"{what} should have shape {shape}", expected=shape, got=tuple(value.shape), hint=hint)
    found = _non_finite(value)
    if found is not None:
        sentence, why = _non_finite_words(found, "holds", "index ")
        fail(f"{what} {sentence}", hint=why)
    return value.detach().to(device=target, dtype=torch.float64)


def entries(answer: Any, count: int, what: str, *, hint: str | None = None) -> list[Any]:
    """``answer`` as a list of ``count`` entries (a list, a tuple, a 1-D tensor or array), or a failure that
    says what it should be and how many entries it has."""
    if isinstance(answer, (str, bytes, Mapping)) or not (isinstance(answer, Sequence) or hasattr(answer, "tolist")):
        fail(f"{what} should be a list or tuple of {count} entries", got=f"{type(answer).__name__} {_show(answer)}",
             hint=hint)
    values = answer.tolist() if hasattr(answer, "tolist") else list(answer)
    if not isinstance(values, list):                # a 0-d tensor or array: one number
        fail(f"{what} should be a list or tuple of {count} entries", got=f"one number {_show(values)}", hint=hint)
    expect(len(values) == count, f"{what} should have {count} entr{'ies' if count != 1 else 'y'}",
           got=f"{len(values)} entr{'ies' if len(values) != 1 else 'y'}", hint=hint)
    return values


def numbers_by_key(answer: Any, keys: Sequence[Any], what: str) -> dict[Any, Any]:
    """``answer`` as a dict over ``keys``: a mapping with exactly these keys, or a sequence in their order."""
    if isinstance(answer, Mapping):
        given = {(int(k) if isinstance(k, numbers.Integral) else k): v for k, v in answer.items()}
        missing = [k for k in keys if k not in given]
        extra = [k for k in given if k not in keys]
        expect(not missing and not extra, f"{what} should have one entry for each of {list(keys)}",
               got=f"keys {sorted(given, key=str)}")
        return {k: given[k] for k in keys}
    values = answer.tolist() if hasattr(answer, "tolist") else answer
    if isinstance(values, Sequence) and not isinstance(values, (str, bytes)):
        values = list(values)
        expect(len(values) == len(keys), f"{what} should have {len(keys)} entries, one for each of "
               f"{list(keys)}", got=f"{len(values)} entr{'ies' if len(values) != 1 else 'y'}")
        return dict(zip(keys, values))
    fail(f"{what} should be a dict keyed by {list(keys)} (or a list in that order)",
         got=f"{type(answer).__name__} {_show(answer)}")


def call(function: Any, *args: Any, name: str = "your function", hint: str | None = None,
         **kwargs: Any) -> Any:
    """Call the student's ``function``; an exception it raises becomes a failure naming the case
    (with ``hint``, if given). When it failed by mixing devices, the hint says instead which device
    its inputs are on and what to move (``device=contexts.device``, ``.cpu()`` before NumPy)."""
    expect(callable(function), "your answer should be a function" if name == "your function"
           else f"{name} should be a function", got=type(function).__name__)
    try:
        return function(*args, **kwargs)
    except Failure:
        raise
    except Exception as err:  # the student's code failed: report it as the answer's fault
        fail(f"{name} raised {type(err).__name__}: {str(err)[:300]}",
             hint=_device_hint(err, function, args, kwargs) or hint)


# --- running a checker ----------------------------------------------------------------------------

def _natural(value: Any, returned: Callable[[Any, Any], Any] | None = None) -> Any:
    """``value`` with NumPy's types read as the ones checkers compare: an array as a tensor (0-d: a
    Python number), a NumPy scalar as a Python ``bool``/``int``/``float``; inside dicts, lists and
    tuples too, and in what an answer function returns, which ``returned(function, result)`` then reads
    (when given). Everything else is returned unchanged."""
    np = sys.modules.get("numpy")   # an answer holds NumPy objects only if NumPy was imported
    if np is not None and isinstance(value, np.generic):
        return value.item()
    if np is not None and isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return value
        if value.ndim == 0:
            return value.item()
        import torch

        return torch.as_tensor(np.array(value), device="cpu")     # where NumPy's numbers are
    if type(value) is dict:
        return {_natural(k): _natural(v, returned) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_natural(v, returned) for v in value)
    if inspect.isfunction(value) or inspect.ismethod(value) or isinstance(value, functools.partial):
        function = value

        @functools.wraps(function)
        def natural(*args: Any, **kwargs: Any) -> Any:
            result = _natural(function(*args, **kwargs))
            return result if returned is None else returned(function, result)

        return natural
    return value


def _one_element(value: Any, where: str = "", depth: int = 4) -> tuple[str, str] | None:
    """Where ``value`` holds a list or tuple of one element (``("", "list")`` for ``value`` itself,
    ``("[16]", "tuple")`` inside it), searching lists, tuples and dicts ``depth`` deep; None if nowhere."""
    if type(value) in (list, tuple) and len(value) == 1:
        return where, type(value).__name__
    if depth <= 0:
        return None
    items = (enumerate(value) if type(value) in (list, tuple) else value.items() if type(value) is dict else ())
    for k, item in items:
        found = _one_element(item, f"{where}[{k!r}]", depth - 1)
        if found is not None:
            return found
    return None


def _unwrapped(value: Any) -> Any:
    """``value`` with every list or tuple of one element replaced by the element (in lists, tuples, dicts)."""
    while type(value) in (list, tuple) and len(value) == 1:
        value = value[0]
    if type(value) in (list, tuple):
        return type(value)(_unwrapped(v) for v in value)
    if type(value) is dict:
        return {k: _unwrapped(v) for k, v in value.items()}
    return value


def _function_name(function: Any, name: str) -> str:
    """How a message names the student's function: its own name, else the parameter it was given as."""
    own = getattr(function, "__name__", "")
    return f"your function {own}" if own.isidentifier() else f"your function ({name})"


class _Intake:
    """The student's answer, read for the checker: NumPy types as torch and Python ones (:func:`_natural`), and
    every answer function wrapped so that what it returns is refused when it holds NaN or an infinity. With
    ``unwrap``, lists of one are replaced by their element, in the answer and in what its functions return;
    without, the lists of one that the functions returned are noted in ``nested``."""

    def __init__(self, unwrap: bool) -> None:
        self.unwrap = unwrap
        self.nested: list[str] = []

    def value(self, value: Any, name: str) -> Any:
        if self.unwrap:
            value = _unwrapped(value)
        return _natural(value, lambda function, result: self.returned(function, name, result))

    def returned(self, function: Any, name: str, result: Any) -> Any:
        who = _function_name(function, name)
        if self.unwrap:
            result = _unwrapped(result)
        elif (found := _one_element(result)) is not None and not self.nested:
            where, kind = found
            inside = f" inside what it returned, at {where}" if where else ""
            self.nested.append(f"{who} returned a {kind} of one{inside}: return the value itself, not the "
                               f"value in a {kind}")
        found = _non_finite(result, records=True)
        if found is not None:
            what, hint = _non_finite_words(found, "returned", "")
            fail(f"{who} {what}", hint=hint)
        return result


def _answer_problem(named: list[tuple[str, Any]]) -> str | None:
    """What is wrong with the form of the answer's values before any checking: a NaN or an infinity."""
    for name, value in named:
        found = _non_finite(_natural(value))
        if found is not None:
            what, hint = _non_finite_words(found, "holds", name)
            return _failure_text(f"your answer {name} {what if found[1] else 'is ' + found[0]}", hint=hint)
    return None


def _nesting_problem(named: list[tuple[str, Any]], intake: _Intake) -> str | None:
    """The first list of one in the answer's values, or in what its functions returned, in words."""
    for name, value in named:
        found = _one_element(value)
        if found is not None:
            where, kind = found
            subject = f"your answer {name}" if not where else f"{name}{where} in your answer"
            return _wrap(f"{subject} is a {kind} of one: give the value itself, not the value in a {kind}")
    return _wrap(intake.nested[0]) if intake.nested else None


def _run(entry: Checker, answer: tuple, named: dict, names: Sequence[str], intake: _Intake) -> Result:
    """One run of ``entry``'s checker on the answer read by ``intake``."""
    _cases_seen.clear()
    _current_case.clear()
    try:
        entry.function(*(intake.value(v, n) for v, n in zip(answer, names)),
                       **{k: intake.value(v, k) for k, v in named.items()})
    except Failure as failure:
        return Result(entry.label, False, str(failure))
    except Exception as err:  # a bug in the checker: the intake and the helpers speak of the answer's form
        where = f" in {_current_case[-1]}" if _current_case else ""
        return Result(entry.label, False, f"your answer could not be checked{where}: {type(err).__name__}: "
                                          f"{str(err)[:300]} (a bug in the checker: please report it)")
    finally:
        _current_case.clear()
    count = len(_cases_seen)
    return Result(entry.label, True, f"{count} case{'s' * (count != 1)}" if count else "all checks")


def run_check(label: str, *answer: Any, **named: Any) -> Result:
    """Check ``answer`` against the checker of exercise ``label``; never raises, returns a :class:`Result`.

    ``label`` may also be given in a one-element list; the answer may use NumPy's types (arrays, scalars),
    read as tensors and Python numbers, also in what an answer function returns. A NaN or an infinity in
    the answer, or in what an answer function returns, is refused before the checker judges the values;
    an answer refused while it holds a list of one (``[3]`` for ``3``) that passes without it is told so.
    """
    checkers = registry()
    if isinstance(label, (list, tuple)) and len(label) == 1:
        label = label[0]
    if not isinstance(label, str):
        return Result(str(label), False, f"the exercise's label should be a string such as "
                                         f"'ex-mahdavi-skip-3', got {type(label).__name__} {_show(label)}")
    if label not in checkers:
        import difflib

        near = difflib.get_close_matches(str(label), checkers, n=3)
        guess = f"; did you mean {', '.join(near)}?" if near else ""
        return Result(str(label), False, f"there is no checker for {label!r}{guess}")
    entry = checkers[label]
    try:
        bound = inspect.signature(entry.function).bind(*answer, **named)
    except TypeError as err:
        return Result(label, False, f"wrong arguments ({err}); call it as {entry.call}")
    names = list(bound.arguments)[:len(answer)]
    given = list(zip(names, answer)) + list(named.items())
    problem = _answer_problem(given)
    if problem is not None:
        return Result(label, False, problem)
    intake = _Intake(unwrap=False)
    result = _run(entry, answer, named, names, intake)
    if result.passed:
        return result
    nesting = _nesting_problem(given, intake)
    if nesting is None:
        return result
    from contextlib import redirect_stderr, redirect_stdout

    from memcap.textbook.exercises import _Discard

    with redirect_stdout(_Discard()), redirect_stderr(_Discard()):     # what it prints is shown once
        unwrapped = _run(entry, answer, named, names, _Intake(unwrap=True))
    return Result(label, False, nesting) if unwrapped.passed else result

"""Checkers for the book's exercises: ``check("ex-...", answer)`` tells a student whether an answer is right.

In a chapter's notebook::

    from memcap.textbook.exercises import check
    check("ex-mahdavi-tightness-3", shift_to_zero_sum)

prints ``ex-mahdavi-tightness-3: passed (3 cases)``, or what is wrong: which case failed, what was
expected and what the answer gave, and a hint, never the solution. ``check`` never raises, so "Run all"
goes on past an unfinished exercise; it returns a :class:`Result`, true when the answer passed, so the
book's own solutions write ``assert check(...)`` and the strict build proves that every checker passes
its reference solution.

Every coding exercise, and every computation exercise with a numeric answer, has a checker. The
checkers of one chapter live in one module of this package, named after the chapter
(``mahdavi_tightness.py`` for ``book/mahdavi/tightness.md``); to add one, write a small function with
a docstring saying what it tests and register it with :func:`checker`, using the helpers of
``memcap.textbook.exercises.checking`` (:func:`case`, :func:`expect`, :func:`close`, :func:`call`).

The grader (``python -m memcap grade``, :mod:`memcap.textbook.grading`) runs the student's notebook in a sandbox,
then asks its kernel for every answer the notebook last passed to ``check`` (kept in ``_SUBMITTED``)
and runs the checker on it in the grader's own process, so a notebook cannot change its verdict.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import pkgutil
from typing import Any

from memcap.textbook.exercises.checking import (
    Checker,
    Failure,
    Result,
    call,
    case,
    checker,
    close,
    expect,
    fail,
    numbers_by_key,
    registry,
    run_check,
)

__all__ = ["Checker", "Failure", "Result", "call", "case", "check", "checker", "chapter_labels", "close",
           "expect", "fail", "grade", "numbers_by_key", "registry", "run_check"]

_SUBMITTED: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
_LOADED: list[bool] = []


def _load_chapters() -> None:
    """Import every chapter module of this package once, so that their checkers are registered."""
    if _LOADED:
        return
    _LOADED.append(True)
    for module in pkgutil.iter_modules(__path__):
        if module.name != "checking" and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def check(label: str, *answer: Any, **named: Any) -> Result:
    """Check ``answer`` to exercise ``label``: print the verdict and return it (a :class:`Result`).

    The arguments after the label are the answer; each exercise's text shows the call. The answer is
    also remembered, so that a grader running the notebook can check it again (:func:`grade`).
    """
    _SUBMITTED[str(label)] = (answer, named)
    result = run_check(label, *answer, **named)
    print(result)
    return result


def chapter_labels(chapter: str) -> list[str]:
    """The labels of the exercises of ``chapter`` (``book/mahdavi/skip``) that have a checker, sorted."""
    return sorted(label for label, entry in registry().items() if entry.chapter == chapter)


class _Discard(io.TextIOBase):
    """A text stream that forgets what is written (a student's print loop cannot fill the memory)."""

    def write(self, text: str) -> int:
        return len(text)


def grade(label: str) -> dict[str, Any]:
    """Check again the last answer this process passed to ``check(label, ...)``, silently.

    Returns ``{"exercise", "passed", "message"}``; an exercise never passed to ``check`` fails with a
    message saying so. What the student's code prints while being checked is discarded. (The grader
    does not use it: a verdict computed in the student's process is only as honest as that process.)
    """
    if label not in _SUBMITTED:
        return {"exercise": label, "passed": False,
                "message": f'no answer: the notebook never called check("{label}", ...)'}
    answer, named = _SUBMITTED[label]
    with contextlib.redirect_stdout(_Discard()), contextlib.redirect_stderr(_Discard()):
        result = run_check(label, *answer, **named)
    return {"exercise": label, "passed": result.passed, "message": result.message}

"""The students' entry point: ``from memcap.exercises import check``.

The checkers live in :mod:`memcap.textbook.exercises`; this module names the same objects, so that every
notebook of the student edition, including those handed out before the checkers moved there, keeps
working.
"""
from memcap.textbook.exercises import (  # noqa: F401  (re-exported)
    Checker,
    Failure,
    Result,
    __all__,
    call,
    case,
    chapter_labels,
    check,
    checker,
    close,
    expect,
    fail,
    grade,
    numbers_by_key,
    registry,
    run_check,
)

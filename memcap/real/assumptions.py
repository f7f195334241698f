"""Mahdavi et al.'s assumptions on real models and real data, offline: their Table 1, Figure 1 and Table 3.

The paper (Sec. 5.1 and App. J) feeds 2000 ImageNet images through a ViT and Wikipedia passages through BERT
and GPT-2 (how many passages, and which GPT-2, it does not say), and tests Assumptions 1-3 and general
position on the token matrices after the embedding (layer 0) and after the first layer. This module does the
same with what a fresh machine has without downloading anything (:mod:`memcap.real.data`): scikit-learn's 8 x 8
digits and a small ViT (:mod:`memcap.real.vit`) for Table 1 and Figure 1; the Python Language Reference text, a
small GPT-like model trained here and the pretrained all-MiniLM-L6-v2 encoder shipped in a PyPI wheel
(:mod:`memcap.real.textmodels`) for Table 3.

:data:`PAPER` holds the paper's numbers we compare with (facts from the paper, cited in the book);
:data:`QUICK` and :data:`PAPER_PROFILE` are the two profiles (``MEMCAP_PROFILE`` picks one, see
:func:`settings`). Everything runs on ``device`` (None: :func:`memcap.device.pick_device`), in float32
like the paper's models, so the rank tolerance is float32's. The text is cut into windows on the CPU.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import torch

from memcap import _resolve, linalg
from memcap._checks import (
    check_bool,
    check_shape,
    finite_real,
    nonnegative_int,
    nonnegative_real,
    positive_int,
    positive_real,
    real_tensor,
    seed_int,
)
from memcap._schema import Key, keyed, nested
from memcap.profiles import check_profile
from memcap.real.data import byte_tokens, english_text, load_digits, sentence_pairs, text_windows
from memcap.real.textmodels import BertEncoder, GPTConfig, TinyGPT, load_minilm, minilm_dir, train_language_model
from memcap.real.transformer import AttentionWithSkip, init_xavier_
from memcap.real.vit import TinyViT, ViTConfig, accuracy, train_classifier

__all__ = ["PAPER", "QUICK", "PAPER_PROFILE", "settings", "Layers", "vit_layers", "gpt_layers", "bert_layers",
           "reports", "figure1_sizes", "mark", "cells", "figure1", "agreement", "COLUMNS", "TABLE1_ROWS",
           "TABLE3_COLUMNS", "comparison_cells", "paper_table3"]

PAPER = {
    "vit": {"examples": 2000, "context_size": 197, "dim": 768},
    "bert": {"examples": 2000, "context_size": 512, "dim": 1024, "kruskal": {"random": 349, "trained": 291}},
    "gpt2": {"examples": 2000, "context_size": 1024, "dim": 1280},
    "subsets": 5000,
    "threshold": 0.99,
    "fig1_step": 10,
    # Table 1: rows -> verdicts (general position, Assumption 1, Assumption 2); Assumption 3 holds for
    # the embedding layer (stated in Sec. 5.1).
    "table1": {
        "embedding": {"general_position": False, "assumption_1": False, "assumption_2": True, "assumption_3": True},
        "random_attention": {"general_position": False, "assumption_1": True, "assumption_2": True},
        "random_vit": {"general_position": False, "assumption_1": True, "assumption_2": True},
        "trained_vit": {"general_position": False, "assumption_1": True, "assumption_2": True},
    },
    # Table 3: (model, weights, layer) -> verdicts.
    "table3": {
        ("gpt", "random", 0): {"general_position": False, "assumption_1": False, "assumption_2": True},
        ("gpt", "random", 1): {"general_position": False, "assumption_1": True, "assumption_2": True},
        ("gpt", "trained", 0): {"general_position": False, "assumption_1": False, "assumption_2": True},
        ("gpt", "trained", 1): {"general_position": False, "assumption_1": True, "assumption_2": False},
        ("bert", "random", 0): {"general_position": False, "assumption_1": False, "assumption_2": True},
        ("bert", "random", 1): {"general_position": False, "assumption_1": False, "assumption_2": True},
        ("bert", "trained", 0): {"general_position": False, "assumption_1": False, "assumption_2": True},
        ("bert", "trained", 1): {"general_position": False, "assumption_1": False, "assumption_2": True},
    },
}
"""The numbers of Mahdavi et al. (ICLR 2024) that the book compares with: sizes (Sec. 5.1, App. J),
verdicts of Table 1 and Table 3, BERT's Kruskal-rank estimates (291 trained, 349 random; App. J).

Not in the paper's text, and marked as the book's choices where the book uses them: the number of text
examples (2000, the number of ImageNet images of Sec. 5.1), GPT-2's size (GPT-2 large's n = 1024,
d = 1280; the paper says only "GPT2") and ``fig1_step`` (the step in k of Figure 1's curve). BERT's
n/d = 512/1024 is stated (App. J).

:meta hide-value:
"""

QUICK = {
    "seed": 0,
    "vit": {"config": {"image_size": 8, "patch": 2, "dim": 64, "heads": 4, "depth": 2},
            "train": {"steps": 400, "batch_size": 64, "lr": 3e-3}, "held_out": 297},
    "gpt": {"config": {"context": 64, "dim": 80, "heads": 4, "depth": 2},
            "train": {"steps": 400, "batch_size": 16, "lr": 3e-3}, "examples": 1000},
    "bert": {"context_size": 64, "examples": 600},
    "tests": {"subsets": 5000, "kruskal_subsets": 300, "fig1_step": 3, "fig1_subsets": 1000, "threshold": 0.99},
}
"""Quick profile: the paper's design on 8 x 8 digits (n = 17 tokens, d = 64, so n/d is the paper's
197/768 to 1 %), a GPT-like model with n = 64, d = 64, and MiniLM on 64-token passages."""

PAPER_PROFILE = {
    "seed": 0,
    "vit": {"config": {"image_size": 224, "patch": 16, "dim": 768, "heads": 12, "depth": 12},
            "train": {"steps": 3000, "batch_size": 128, "lr": 3e-4}, "held_out": 297},
    "gpt": {"config": {"context": 1024, "dim": 1280, "heads": 20, "depth": 4},
            "train": {"steps": 3000, "batch_size": 16, "lr": 3e-4}, "examples": 2000},
    "bert": {"context_size": 192, "examples": 2000},
    "tests": {"subsets": 5000, "kruskal_subsets": 5000, "fig1_step": 10, "fig1_subsets": 5000, "threshold": 0.99},
}
"""Paper-like profile (for a GPU): ViT-Base's geometry (digits upsampled to 224 x 224, 16 x 16 patches,
so n = 197, d = 768, 12 layers), a GPT-like model at GPT-2 large's n = 1024, d = 1280 (the book's choice
of GPT-2), and MiniLM at
BERT-large's ratio n/d = 1/2 (n = 192, d = 384)."""


def settings(profile: str | None = None) -> tuple[str, dict]:
    """``(name, a deep copy of its settings)`` for ``profile`` (None: ``MEMCAP_PROFILE``, quick by default)."""
    name = check_profile(profile)
    return name, copy.deepcopy(PAPER_PROFILE if name == "paper" else QUICK)


@dataclass
class Layers:
    """Token matrices of several models/layers on the same T examples: ``contexts[key]`` is ``(T, n, d)``,
    ``queries[key]`` is ``(T, d)`` (a row of the context: ``[CLS]`` for ViT and BERT, the last token for
    GPT). ``info`` holds what else was measured (accuracies, losses, sizes)."""

    contexts: dict = field(default_factory=dict)
    queries: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def add(self, key: object, states: torch.Tensor, query_row: int) -> None:
        """Record ``states: (T, n, d)`` under ``key`` with row ``query_row`` (in 0..n-1) as the query."""
        states = check_shape("states", real_tensor("states", states).detach(), (None, None, None), "(T, n, d)")
        query_row = nonnegative_int("query_row", query_row)
        if query_row >= states.shape[1]:
            raise ValueError(f"query_row must be a row of the context, in 0..n-1 = {states.shape[1] - 1}, "
                             f"got {query_row}")
        self.contexts[key] = states
        self.queries[key] = states[:, query_row]


def _batched(fn, inputs: torch.Tensor, batch: int = 256) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([fn(inputs[i:i + batch]) for i in range(0, len(inputs), batch)])


def _model_keys(cls: type) -> dict[str, Key]:
    """The fields of a model config dataclass (``ViTConfig``, ``GPTConfig``), each optional:
    sizes are positive ints, ``init_std`` a positive real."""
    return {f.name: Key(positive_real if f.name == "init_std" else positive_int,
                        f"{cls.__name__}'s {f.name}, a positive {'real' if f.name == 'init_std' else 'int'}",
                        needed=False) for f in fields(cls)}


_TRAINING = {"steps": Key(positive_int, "the training steps, a positive int"),
             "batch_size": Key(positive_int, "the batch size, a positive int"),
             "lr": Key(positive_real, "the peak learning rate, a positive real"),
             "weight_decay": Key(nonnegative_real, "AdamW's weight decay, a real >= 0", needed=False)}


def _tests(needed: tuple[str, ...]) -> dict[str, Key]:
    """The keys of a profile's ``"tests"`` part, those ``needed`` by the caller required."""
    keys = {"subsets": (positive_int, "random n-subsets per assumption test, a positive int"),
            "kruskal_subsets": (positive_int, "subsets per size of the Kruskal-rank estimate, a positive int"),
            "fig1_step": (positive_int, "the step in k of Figure 1's curve, a positive int"),
            "fig1_subsets": (positive_int, "subsets per size of Figure 1's curve, a positive int"),
            "threshold": (finite_real, "the fraction of independent subsets that counts as holding, a real")}
    return {k: Key(check, holds, needed=k in needed) for k, (check, holds) in keys.items()}


_PARTS = {
    "vit": {"config": Key(nested(_model_keys(ViTConfig), "a ViTConfig"), "the ViT's sizes (ViTConfig)"),
            "train": Key(nested(_TRAINING, "a training setting"), "the training setting (steps, batch_size, lr)"),
            "held_out": Key(positive_int, "the digits held out for testing, a positive int")},
    "gpt": {"config": Key(nested(_model_keys(GPTConfig), "a GPTConfig"), "the model's sizes (GPTConfig)"),
            "train": Key(nested(_TRAINING, "a training setting"), "the training setting (steps, batch_size, lr)"),
            "examples": Key(positive_int, "the number of text windows T, a positive int")},
    "bert": {"context_size": Key(positive_int, "the passage length n in WordPiece tokens, a positive int"),
             "examples": Key(positive_int, "the number of passages T, a positive int")},
}
"""The keys of the parts of a profile (:data:`QUICK`, :data:`PAPER_PROFILE`) that the functions below take."""


def _part(name: str, value: object, part: str, keys: Mapping[str, Key]) -> dict:
    """``value`` checked to be the ``part`` section of a profile (a dict with ``keys``), not the whole
    profile nor anything else: a careless call names the argument, the key and what to pass."""
    if isinstance(value, Mapping) and part in value:
        raise ValueError(f"{name} must be the {part!r} part of a profile, got a whole profile: pass "
                         f"profile[{part!r}]")
    keyed(name, value, keys, f"the {part!r} part of a profile")
    return value


def _run_on(device: torch.device | str | None, seed: object) -> tuple[torch.device, int]:
    return _resolve.device(device), seed_int("seed", seed)


def vit_layers(cfg: dict, *, device: torch.device | str | None = None, seed: int = 0) -> Layers:
    """Table 1's four models on all digits: a random ViT's embedding (``"embedding"``), one random
    attention layer with skip on it (``"random_attention"``, one head, Glorot init), the first block of
    the random ViT (``"random_vit"``) and of the same ViT trained on the digits (``"trained_vit"``).
    ``cfg``: the ``"vit"`` part of a profile: ``config`` (``ViTConfig``'s fields), ``train``
    (``steps``, ``batch_size``, ``lr``, optionally ``weight_decay``) and ``held_out``; a missing, unknown
    or mistyped key is refused naming it (``cfg['train']['lr']``). ``info``: accuracies, losses, n, d, T."""
    cfg = _part("cfg", cfg, "vit", _PARTS["vit"])
    device, seed = _run_on(device, seed)
    images, labels = load_digits(device=device)
    config = ViTConfig(**cfg["config"])
    model = TinyViT(config, generator=torch.Generator().manual_seed(seed)).to(device)
    attention = init_xavier_(AttentionWithSkip(config.dim, heads=1), torch.Generator().manual_seed(seed + 1)).to(device)
    out = Layers()
    states = [_batched(lambda x, k=k: model.hidden_states(x, 1)[k], images) for k in (0, 1)]  # (T, n, d)
    out.add("embedding", states[0], 0)
    out.add("random_attention", _batched(attention, states[0]), 0)
    out.add("random_vit", states[1], 0)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed + 2)).to(device)
    held = order[:cfg["held_out"]]
    train = order[cfg["held_out"]:]
    losses = train_classifier(model, images[train], labels[train], generator=torch.Generator().manual_seed(seed + 3),
                              **cfg["train"])
    out.add("trained_vit", _batched(lambda x: model.hidden_states(x, 1)[1], images), 0)
    out.info = {"train_accuracy": accuracy(model, images[train], labels[train]),
                "test_accuracy": accuracy(model, images[held], labels[held]), "losses": losses,
                "examples": len(labels), "train_examples": len(train), "context_size": config.tokens,
                "dim": config.dim, "patch": config.patch, "patch_dim": config.patch_dim,
                "image_size": config.image_size, "config": config}
    return out


def gpt_layers(cfg: dict, *, device: torch.device | str | None = None, seed: int = 0) -> Layers:
    """Table 3's GPT columns: layers 0 and 1 of a random GPT-like model (keys ``("gpt", "random", 0)``,
    ``("gpt", "random", 1)``) and of the same model trained on the English text (``"trained"``), on T
    random byte windows of n tokens; the query is the last token. ``cfg``: the ``"gpt"`` part of a profile:
    ``config`` (``GPTConfig``'s fields), ``train`` (as for :func:`vit_layers`) and ``examples`` T;
    checked as a whole like :func:`vit_layers`'s."""
    cfg = _part("cfg", cfg, "gpt", _PARTS["gpt"])
    device, seed = _run_on(device, seed)
    tokens = byte_tokens(english_text(), device="cpu")
    config = GPTConfig(**cfg["config"])
    model = TinyGPT(config, generator=torch.Generator().manual_seed(seed)).to(device)
    windows = text_windows(tokens, config.context, cfg["examples"],
                           generator=torch.Generator().manual_seed(seed + 1)).to(device)  # (T, n)
    out = Layers()
    for weights in ("random", "trained"):
        if weights == "trained":
            losses = train_language_model(model, tokens, generator=torch.Generator().manual_seed(seed + 2),
                                          **cfg["train"])
        for layer in (0, 1):
            out.add(("gpt", weights, layer), _batched(lambda x, k=layer: model.hidden_states(x, 1)[k], windows, 64),
                    config.context - 1)
    out.info = {"losses": losses, "examples": cfg["examples"], "context_size": config.context,
                "dim": config.dim, "text_bytes": int(tokens.numel()), "config": config,
                "distinct_last_bytes": int(windows[:, -1].unique().numel())}
    return out


def bert_layers(cfg: dict, *, device: torch.device | str | None = None, seed: int = 0) -> Layers | None:
    """Table 3's BERT columns: layers 0 and 1 of the pretrained all-MiniLM-L6-v2 (``("bert", "trained", k)``)
    and of the same architecture re-initialised (``"random"``), on T passages ``[CLS] A [SEP] B`` of n
    WordPiece tokens of the English text; the query is ``[CLS]``. ``None`` when the model's package is
    not installed. ``cfg``: the ``"bert"`` part of a profile: ``context_size`` n and ``examples`` T (checked
    as a whole, before the model is looked for)."""
    cfg = _part("cfg", cfg, "bert", _PARTS["bert"])
    device, seed = _run_on(device, seed)
    if minilm_dir() is None:
        return None
    trained, wordpiece = load_minilm(layers=1)
    random = BertEncoder(trained.config, layers=1).reinitialize(torch.Generator().manual_seed(seed))
    ids = wordpiece.encode(english_text())
    n = cfg["context_size"]
    batch, types = sentence_pairs(ids, n, cfg["examples"], cls_id=wordpiece.cls_id, sep_id=wordpiece.sep_id,
                                  generator=torch.Generator().manual_seed(seed + 1))
    batch, types = batch.to(device), types.to(device)
    out = Layers()
    for weights, model in (("random", random), ("trained", trained)):
        model.to(device).eval()
        with torch.no_grad():
            for layer in (0, 1):
                states = torch.cat([model.hidden_states(batch[i:i + 64], types[i:i + 64], 1)[layer]
                                    for i in range(0, len(batch), 64)])
                out.add(("bert", weights, layer), states, 0)
    positions = trained.position.weight.detach()[:n]  # (n, d): the learned position vectors in use
    out.info = {"examples": cfg["examples"], "context_size": n, "dim": trained.config.hidden_size,
                "wordpieces": int(ids.numel()), "position_rank": linalg.rank(positions),
                "unk_fraction": float((ids == wordpiece.unk_id).double().mean())}
    return out


def reports(layers: Layers, tests: dict, *, seed: int = 0, shifted: bool = True) -> dict:
    """:func:`memcap.linalg.assumption_report` for every key of ``layers`` (one generator per key, seeded
    from ``seed`` and the key's position). ``tests``: the ``"tests"`` part of a profile (``subsets``,
    ``threshold`` and ``kruskal_subsets`` used; ``fig1_step`` and ``fig1_subsets`` allowed); ``shifted``: also
    test Assumption 3."""
    if not isinstance(layers, Layers):
        raise TypeError(f"layers must be a Layers record, got {type(layers).__name__}")
    tests = _part("tests", tests, "tests", _tests(("subsets", "threshold", "kruskal_subsets")))
    seed, shifted = seed_int("seed", seed), check_bool("shifted", shifted)
    out = {}
    for i, key in enumerate(layers.contexts):
        out[key] = linalg.assumption_report(
            layers.contexts[key], layers.queries[key], subsets=tests["subsets"], threshold=tests["threshold"],
            generator=_resolve.seeded(1000 * seed + i), kruskal_subsets=tests["kruskal_subsets"],
            shifted=shifted)
    return out


def figure1_sizes(context_size: int, dim: int, step: int) -> list[int]:
    """Candidate Kruskal ranks of Figure 1: 1, 1 + step, ... up to d, plus n and d themselves."""
    context_size, dim = positive_int("context_size", context_size), positive_int("dim", dim)
    step = positive_int("step", step)
    return sorted(set(range(1, dim + 1, step)) | {context_size, dim})


def mark(holds: bool) -> str:
    """✓ or ✗."""
    check_bool("holds", holds)
    return "✓" if holds else "✗"


def cells(report: linalg.AssumptionReport) -> dict[str, str]:
    """The table cells of one report: a mark and the measured number behind it.

    ``general_position``: the Kruskal-rank estimate against ``min(T, d)``; ``assumption_1`` and
    ``assumption_3``: the fraction of independent random n-subsets (4 decimals); ``assumption_2``: the
    fraction of full-rank contexts and the smallest context rank; ``kruskal``: the 99 % rule's estimate
    and, after ≤, the proved upper bound ("38 (≤ 40)"; "38, but ≤ 37" where a dependent subset drawn
    proves the estimate too high)."""
    if not isinstance(report, linalg.AssumptionReport):
        raise TypeError(f"report must be a linalg.AssumptionReport, got {type(report).__name__}")
    r = report
    limit = min(r.examples, r.dim)
    sign = "=" if r.in_general_position else "<"
    return {"general_position": f"{mark(r.in_general_position)} ({r.kruskal.estimate} {sign} {limit})",
            "assumption_1": f"{mark(r.holds_1)} ({r.assumption_1.fraction:.4f})",
            "assumption_2": f"{mark(r.holds_2)} ({r.full_rank_contexts:.3f}; min {int(r.context_ranks.min())})",
            "assumption_3": ("not measured" if r.assumption_3 is None
                             else f"{mark(r.holds_3)} ({r.assumption_3.fraction:.4f})"),
            "kruskal": (f"{r.kruskal.estimate} (≤ {r.kruskal.upper_bound})"
                        if r.kruskal.upper_bound >= r.kruskal.estimate
                        else f"{r.kruskal.estimate}, but ≤ {r.kruskal.upper_bound}")}


def figure1(layers: Layers, tests: dict, *, seed: int = 0) -> dict:
    """Figure 1's curves: :func:`memcap.linalg.kruskal_curve` of every key's queries at
    :func:`figure1_sizes`, with ``tests["fig1_subsets"]`` subsets per size (``tests``: the ``"tests"`` part
    of a profile, ``fig1_step``, ``fig1_subsets`` and ``threshold`` used)."""
    if not isinstance(layers, Layers):
        raise TypeError(f"layers must be a Layers record, got {type(layers).__name__}")
    tests = _part("tests", tests, "tests", _tests(("fig1_step", "fig1_subsets", "threshold")))
    seed = seed_int("seed", seed)
    out = {}
    for i, key in enumerate(layers.queries):
        t_count, n, d = layers.contexts[key].shape
        out[key] = linalg.kruskal_curve(layers.queries[key], figure1_sizes(n, d, tests["fig1_step"]),
                                        subsets=tests["fig1_subsets"], threshold=tests["threshold"],
                                        generator=_resolve.seeded(1000 * seed + 500 + i))
    return out


_VERDICTS = {"general_position": "in_general_position", "assumption_1": "holds_1", "assumption_2": "holds_2",
             "assumption_3": "holds_3"}
"""The verdict columns of the tables and the :class:`memcap.linalg.AssumptionReport` property of each."""


def _verdict_table(name: str, value: object, entry: str) -> Mapping:
    """``value`` if it is a dict whose values are dicts (``entry`` says what they hold), else a TypeError
    naming ``name`` (or ``name[key]``)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict {{key: {entry}}}, got {type(value).__name__}")
    for key, row in value.items():
        if not isinstance(row, Mapping):
            raise TypeError(f"{name}[{key!r}] must be a dict {entry}, got {type(row).__name__}")
    return value


def _reports(name: str, value: object) -> Mapping:
    """``value`` if it is a dict ``{key: linalg.AssumptionReport}``, else a TypeError naming ``name``."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict {{key: linalg.AssumptionReport}}, got {type(value).__name__}")
    for key, report in value.items():
        if not isinstance(report, linalg.AssumptionReport):
            raise TypeError(f"{name}[{key!r}] must be a linalg.AssumptionReport, got {type(report).__name__}")
    return value


def agreement(measured: dict, paper: dict) -> tuple[int, int]:
    """``(agreeing, compared)``: how many of the paper's verdicts in ``paper`` (``{key: {column: bool}}``,
    columns of :data:`COLUMNS`) the reports ``measured`` (``{key: AssumptionReport}``) reproduce. Not
    compared: keys absent from ``measured``, verdicts it did not measure (``holds_3`` is None after
    ``reports(..., shifted=False)``, "not measured" in :func:`cells`) and the ``kruskal`` column (a number,
    not a verdict, as in :func:`paper_table3`)."""
    measured = _reports("measured", measured)
    paper = _verdict_table("paper", paper, "{column: bool}")
    for k, cols in paper.items():
        for c, v in cols.items():
            if c not in COLUMNS:
                raise ValueError(f"paper[{k!r}] has the column {c!r}, not one of {COLUMNS}")
            if c in _VERDICTS and not isinstance(v, bool):
                raise TypeError(f"paper[{k!r}][{c!r}] must be a bool verdict, got {type(v).__name__}")
    pairs = [(getattr(measured[k], _VERDICTS[c]), v) for k, cols in paper.items() if k in measured
             for c, v in cols.items() if c in _VERDICTS]
    pairs = [(a, b) for a, b in pairs if a is not None]
    return sum(a == b for a, b in pairs), len(pairs)


COLUMNS = ("general_position", "assumption_1", "assumption_2", "assumption_3", "kruskal")
"""The measured quantities of the tables, in the order of their rows/columns."""
TABLE1_ROWS = ("embedding", "random_attention", "random_vit", "trained_vit")
"""Table 1's models, in the paper's order."""
TABLE3_COLUMNS = tuple((model, weights, layer) for model in ("gpt", "bert") for weights in ("random", "trained")
                       for layer in (0, 1))
"""Table 3's columns, in the paper's order: GPT then BERT, random then trained, layer 0 then 1."""


def _paper_text(value: object) -> str:
    if value is None:
        return "–"
    return mark(value) if isinstance(value, bool) else str(value)


def comparison_cells(reports: dict, paper: dict, keys: tuple, *, missing: str = "not installed") -> dict:
    """``{(key, column): "paper / ours"}`` for every key of ``keys`` and column of :data:`COLUMNS`: the
    paper's verdict (✓, ✗, a number, or – where the paper reports none) beside ours from :func:`cells`;
    ``missing`` stands for ours where ``reports`` has no such key (a model that is not installed)."""
    reports = _reports("reports", reports)
    paper = _verdict_table("paper", paper, "{column: verdict or number}")
    out = {}
    for key in keys:
        ours = cells(reports[key]) if key in reports else {}
        theirs = paper.get(key, {})
        for column in COLUMNS:
            out[key, column] = f"{_paper_text(theirs.get(column))} / {ours.get(column, missing)}"
    return out


def paper_table3() -> dict:
    """:data:`PAPER`'s Table 3 verdicts with the BERT Kruskal ranks of App. J added to the layer-1 columns."""
    table = copy.deepcopy(PAPER["table3"])
    for weights, value in PAPER["bert"]["kruskal"].items():
        table["bert", weights, 1]["kruskal"] = value
    return table

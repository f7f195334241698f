"""Part III, an open question: do trained models at their capacity attend the way a proof says?

Mahdavi et al.'s proof saturates every head on the examples it does not serve (Lemma 4), and their
Figure 3 finds most heads saturated at perfect memorization, with almost every example keeping one
unsaturated head. Dana et al.'s proof uses generic, unsaturated attention. This experiment trains both
models on a ladder of training-set sizes with the weights kept, takes the largest size memorized entirely
(the capacity on that ladder), and measures the saturation of its attention (a head is saturated on an
example when one weight exceeds 0.99, :func:`memcap.experiments.mahdavi_fig3.saturation`); the same
statistics of both constructions are the reference points.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from memcap import bounds, synthesis
from memcap.data import mahdavi_task, sinusoidal_positions
from memcap.experiments._grids import split_jobs
from memcap.experiments.mahdavi_fig3 import SATURATION_THRESHOLD, saturation
from memcap.models import aot_attention, aot_forward
from memcap.train import AoTSpec, MHASpec, TrainConfig, mha_forward_stacked, spec_from_dict, trained_attention

NAME = "syn_saturation"
LABEL = "syn-fig-saturation"
TITLE = "Softmax saturation of trained models at their capacity, both architectures"

PAPER = {
    "mha": {"model": {"dim": 64, "context_size": 32, "classes": 100, "shared": True, "heads": 4},
            "examples": [350, 450, 550, 650],
            "train": {"steps": 300_000, "batch_size": 256, "lr": 1e-3, "eval_every": 500}},
    "aot": {"model": {"vocab": 50, "seq_len": 4, "dim": 10, "head_dim": 10, "heads": 8},
            "examples": [200, 300, 400, 500, 600],
            "train": {"steps": 20_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant",
                      "eval_every": 500}},
    "seeds": [0],
}
# Quick: the MHA of the quick Figure 3 (d = 16, n = 8, H = 4), with a ladder that starts low enough and
# enough steps for it to memorize a training set entirely (Figure 3 is about models at perfect
# memorization; with 2500 steps and T >= 170 it never got there); an AoT with S = 4 positions to attend to.
QUICK = {
    "mha": {"model": {"dim": 16, "context_size": 8, "classes": 100, "shared": True, "heads": 4},
            "examples": [90, 120, 150, 170, 210],
            "train": {"steps": 5000, "batch_size": 64, "lr": 2e-2, "eval_every": 100}},
    "aot": {"model": {"vocab": 16, "seq_len": 4, "dim": 8, "head_dim": 2, "heads": 4},
            "examples": [128, 170, 220, 280],
            "train": {"steps": 1200, "batch_size": 32, "lr": 1e-2, "schedule": "warmup_cosine",
                      "eval_every": 100}},
    "seeds": [0],
}

_MHA_FIELDS = tuple(f.name for f in fields(MHASpec))
_AOT_FIELDS = tuple(f.name for f in fields(AoTSpec))


def jobs(profile: str) -> list[dict]:
    """Two training jobs with the weights kept: the MHA ladder and the AoT ladder."""
    g = PAPER if profile == "paper" else QUICK
    mha = [MHASpec(**g["mha"]["model"], examples=T, seed=s, data_seed=s)
           for T in g["mha"]["examples"] for s in g["seeds"]]
    aot = [AoTSpec(**g["aot"]["model"], examples=T, seed=s, data_seed=s)
           for T in g["aot"]["examples"] for s in g["seeds"]]
    return (split_jobs(mha, TrainConfig(**g["mha"]["train"]), None, keep_params=True)
            + split_jobs(aot, TrainConfig(**g["aot"]["train"]), None, keep_params=True))


@dataclass(frozen=True)
class Saturation:
    """Saturation of one model's attention on its training set (see :func:`saturation`): ``model`` ('MHA' or
    'AoT'), ``source`` ('trained' or 'construction'), ``examples`` T, ``accuracy`` on it, ``memorized``
    (accuracy 1), ``ladder`` ((T, accuracy), ...) for trained models; ``heads``, ``positions`` (n or S),
    ``max_weight`` (T, H), ``fraction_saturated``, ``fraction_with_unsaturated``, ``count`` (T,)."""

    model: str
    source: str
    examples: int
    accuracy: float
    memorized: bool
    ladder: tuple
    heads: int
    positions: int
    max_weight: np.ndarray
    fraction_saturated: float
    fraction_with_unsaturated: float
    count: np.ndarray


def _stats(model: str, source: str, theta: np.ndarray, accuracy: float, ladder: tuple = ()) -> Saturation:
    s = saturation(theta, SATURATION_THRESHOLD)
    T, H, n = theta.shape
    return Saturation(model, source, T, accuracy, accuracy == 1.0, ladder, H, n, s["max_weight"],
                      s["fraction_saturated"], s["fraction_with_unsaturated"], s["count"])


def _weights(res: dict, i: int) -> dict:
    arrays = res.get("arrays")
    if not arrays:
        raise ValueError("the saturation jobs must keep the trained weights (keep_params=True)")
    return {k.split("/", 1)[1]: v for k, v in arrays.items() if k.split("/", 1)[0] == str(i)}


def _trained(results) -> list[Saturation]:
    out = []
    for res in results.results:
        records = res["records"]
        kind = records[0]["model"]
        ladder = tuple((int(r["examples"]), float(r["accuracy"])) for r in records)
        memorized = [i for i, r in enumerate(records) if r["memorized"]]
        i = max(memorized, key=lambda j: records[j]["examples"]) if memorized else \
            max(range(len(records)), key=lambda j: records[j]["accuracy"])
        names = _MHA_FIELDS if kind == "mha" else _AOT_FIELDS
        spec = spec_from_dict({k: records[i][k] for k in ("model",) + names})
        if kind == "mha":
            theta = trained_attention(spec, _weights(res, i))
            out.append(_stats("MHA", "trained", theta, float(records[i]["accuracy"]), ladder))
        else:
            theta, acc = synthesis.trained_aot_attention(spec, _weights(res, i))
            if abs(acc - float(records[i]["accuracy"])) > 1e-6:
                raise ValueError(f"the AoT's accuracy recomputed from its weights, {acc}, differs from the "
                                 f"engine's {records[i]['accuracy']}: the training set was not redrawn alike")
            out.append(_stats("AoT", "trained", theta, acc, ladder))
    return out


def constructions(g: dict, seed: int = 0) -> list[Saturation]:
    """Saturation of Mahdavi et al.'s construction (MHA, at H(min(n, d_h) - 1) + 1 examples) and of Dana et
    al.'s (AoT, at H d_h + min(d, L) sequences), at the sizes of the trained models of profile grid ``g``."""
    gen = torch.Generator().manual_seed(seed)
    m = g["mha"]["model"]
    H, n, d = m["heads"], m["context_size"], m["dim"]
    d_h = m.get("head_dim") or d
    T = bounds.mha_capacity(H, n, d_h)
    task = mahdavi_task(T, n, d, shared=True, task="classification", classes=m["classes"], generator=gen,
                        dtype=torch.float64, device="cpu")
    w = synthesis.mahdavi_classifier(task.contexts, task.queries, task.labels, classes=m["classes"], heads=H,
                                     head_dim=d_h, generator=gen)
    theta = synthesis.classifier_attention(task, w)
    pos = sinusoidal_positions(n + 1, d, dtype=torch.float64, device=task.contexts.device)
    logits = mha_forward_stacked({k: v[None] for k, v in w.items()}, task.contexts[None], task.queries[None],
                                 pos)[0]
    accuracy = float((logits.argmax(1) == task.labels).double().mean())
    out = [_stats("MHA", "construction", theta.cpu().numpy(), accuracy)]
    a = g["aot"]["model"]
    N, S, d, d_h, H = (a[k] for k in ("vocab", "seq_len", "dim", "head_dim", "heads"))
    tokens, targets = synthesis.dana_table(N, S, dim=d, heads=H, head_dim=d_h, generator=gen)
    built = synthesis.dana_association_aot(tokens, targets, N, dim=d, heads=H, head_dim=d_h, generator=gen)
    accuracy = float((aot_forward(built.params, tokens).argmax(1) == targets).double().mean())
    out.append(_stats("AoT", "construction", aot_attention(built.params, tokens).cpu().numpy(), accuracy))
    return out


def summarize(results, profile: str | None = None) -> list[Saturation]:
    """Saturation of both trained models at their capacity on the ladder, then of both constructions."""
    profile = profile or getattr(results, "profile", "quick")
    return _trained(results) + constructions(PAPER if profile == "paper" else QUICK)

"""Mahdavi et al., Figure 3 (Appendix H): softmax saturation in models that memorize perfectly.

n = 32, d = 64, 100 classes, shared context; H = 4 at T ~ 550 and H = 8 at T ~ 1300 (the largest T each
memorized), 300k steps. A head is saturated on an example when one attention weight exceeds 0.99. T is
fixed per H in the grids (``examples``), as the paper fixes it from an earlier search. The jobs: a
capacity search per H over a ladder of T (to check that the fixed T sits at the edge of memorization),
and training at the fixed T with the weights kept, so the chapter can compute attention with
:func:`memcap.train.trained_attention`.
"""
from __future__ import annotations

from dataclasses import fields

import numpy as np

from memcap._checks import host_array
from memcap.experiments import recorded
from memcap.experiments._grids import mha_capacity_jobs, split_jobs
from memcap.experiments.verdicts import Verdict, grade, holds, percent
from memcap.train import MHASpec, TrainConfig, spec_from_dict, trained_attention

_SPEC_FIELDS = tuple(f.name for f in fields(MHASpec))

NAME = "mahdavi_fig3"
LABEL = "mha-fig-3"
TITLE = "Softmax saturation at perfect memorization"

SATURATION_THRESHOLD = 0.99
"""A head is saturated on an example when some attention weight exceeds this (Mahdavi et al., Appendix H)."""

PAPER = {
    "model": {"dim": 64, "context_size": 32, "classes": 100, "shared": True},
    "examples": {4: 550, 8: 1300},
    "capacity_candidates": [300, 450, 550, 700, 1000, 1300, 1600],
    "capacity_rounds": 2,
    "seeds": [0],
    "train": {"steps": 300_000, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
# Quick: the paper's H = 4 and 8, each at a T that seed 0 memorizes with steps to spare, near the edge that the
# capacity search finds (the chapter shows both). At this size the edge is a band, not a number: trained alone for
# 4000 steps, H = 4 memorizes T = 140 with 3 of the seeds 0-3 and T = 160 or 180 with 1 (seed 0 at 180, after
# 3,200 steps); the figure's premise is that every model memorizes, so T is not pushed to where it barely holds.
QUICK = {
    "model": {"dim": 16, "context_size": 8, "classes": 100, "shared": True},
    "examples": {4: 140, 8: 320},
    "capacity_candidates": [140, 180, 320, 400],
    "capacity_rounds": 0,
    "seeds": [0],
    "train": {"steps": 4000, "batch_size": 64, "lr": 2e-2, "eval_every": 100},
}


RECORDED = recorded.path(NAME)
"""One run of the paper profile's training job on the 2-core reference CPU (d = 64, n = 32, H = 4 at T = 550
and H = 8 at T = 1300, up to 300,000 steps with early stop), kept with its command, engine version, commit
and timing: for each model its record and the largest attention weight of every head on every example
(``max_weight``, (T, H)), from which :func:`saturation_of_max_weights` recomputes the statistics. The
capacity search of the paper profile is not part of it (hours on this machine)."""


def recorded_paper_run() -> tuple[dict, list[dict]]:
    """(provenance, models) of :data:`RECORDED`; each model as in :func:`summarize`'s output (its record and
    saturation statistics; ``capacity`` and ``upper`` None: no search was recorded)."""
    info, kept = recorded.load(NAME, "models")
    models = []
    for m in kept:
        top = np.asarray(m.pop("max_weight"), dtype=float)
        models.append({**m, **saturation_of_max_weights(top), "capacity": None, "upper": None})
    return info, models

def jobs(profile: str) -> list[dict]:
    """A capacity-search job (all H stacked), then one training job at the chosen T per H, weights kept."""
    grid = PAPER if profile == "paper" else QUICK
    heads = sorted(grid["examples"])
    out = mha_capacity_jobs(grid["model"], heads, grid["capacity_candidates"], grid["seeds"], grid["train"],
                            rounds=grid["capacity_rounds"], points=3)
    specs = [MHASpec(**grid["model"], heads=H, examples=grid["examples"][H], seed=s, data_seed=s)
             for H in heads for s in grid["seeds"]]
    return out + split_jobs(specs, TrainConfig(**grid["train"]), None, keep_params=True)


def saturation(theta: np.ndarray, threshold: float = SATURATION_THRESHOLD) -> dict:
    """Saturation statistics of attention weights ``theta`` (T, H, n) (Mahdavi et al., Appendix H).

    Returns ``max_weight`` (T, H) (largest weight of head h on example t), ``saturated`` (T, H) (that
    weight > ``threshold``), ``count`` (T,) saturated heads per example, ``fraction_saturated`` (share of
    all H T head-example pairs) and ``fraction_with_unsaturated`` (share of examples with at least one
    unsaturated head).
    """
    theta = host_array(theta, dtype=float)
    if theta.ndim != 3 or 0 in theta.shape:
        raise ValueError(f"theta must have shape (T, H, n) with no empty axis, got {theta.shape}")
    if not np.allclose(theta.sum(axis=2), 1.0, atol=1e-5) or (theta < 0).any():
        raise ValueError("theta must hold softmax weights: non-negative, summing to 1 over the context axis")
    return saturation_of_max_weights(theta.max(axis=2), threshold)


def saturation_of_max_weights(top: np.ndarray, threshold: float = SATURATION_THRESHOLD) -> dict:
    """:func:`saturation`'s statistics from ``top`` (T, H), the largest attention weight of head h on example t
    (all a recorded run needs to keep, :func:`recorded_paper_run`)."""
    top = host_array(top, dtype=float)
    if top.ndim != 2 or 0 in top.shape:
        raise ValueError(f"top must have shape (T, H) with no empty axis, got {top.shape}")
    if not np.all((top > 0) & (top <= 1 + 1e-6)):
        raise ValueError("top must hold largest softmax weights, in (0, 1]")
    threshold = float(threshold)
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold}")
    sat = top > threshold
    return {"max_weight": top, "saturated": sat, "count": sat.sum(axis=1),
            "fraction_saturated": float(sat.mean()), "fraction_with_unsaturated": float((~sat).any(axis=1).mean())}


def summarize(results) -> list[dict]:
    """Per trained model of the saturation jobs (ExperimentResults ``results``): its spec fields, training
    accuracy, the capacity found for its H (``capacity``, ``upper``) and :func:`saturation` of its
    attention on the whole training set (recomputed from the kept weights)."""
    caps = {c["spec"]["heads"]: c for c in results.capacities}
    out = []
    for job, res in zip(results.jobs, results.results):
        if job.get("kind") != "train":
            continue
        arrays = res.get("arrays")
        if not arrays:
            raise ValueError("the saturation jobs must keep the trained weights (keep_params=True)")
        for i, record in enumerate(res["records"]):
            spec = spec_from_dict({k: record[k] for k in ("model",) + _SPEC_FIELDS})
            params = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.split("/", 1)[0] == str(i)}
            stats = saturation(trained_attention(spec, params))
            cap = caps.get(spec.heads, {})
            out.append({**record, **stats, "capacity": cap.get("capacity"), "upper": cap.get("upper")})
    return out


MOST_EXAMPLES = 0.9
""""Almost every example keeps an unsaturated head" when at least this share of the examples does."""


def majority_saturated(model: dict) -> float:
    """Share of the examples of one summarized model with more than half of their H heads saturated."""
    return float((host_array(model["count"]) > model["heads"] / 2).mean())


def capacity_check(model: dict) -> str:
    """Where the model's fixed T sits against the ladder search of its H, as a clause for the prose."""
    T, cap, upper = int(model["examples"]), model["capacity"], model["upper"]
    if cap is None:
        return f"no capacity search was run for $H = {model['heads']}$"
    if cap == T:
        beyond = f", but not {upper}" if upper is not None else ""
        return f"with $H = {model['heads']}$ the search memorizes $T = {T}${beyond}"
    if cap > T:
        return f"with $H = {model['heads']}$ the search memorizes up to {cap} examples, more than $T = {T}$"
    return f"with $H = {model['heads']}$ the search memorizes only {cap} examples, fewer than $T = {T}$"


def _observed(models: list[dict], most: float) -> tuple[list[bool], list[bool]]:
    """Per model: (more than half of the heads saturated on most examples, at least ``most`` of the examples
    with an unsaturated head), the two criteria of :func:`verdict` and :func:`misses`."""
    return ([majority_saturated(m) > 0.5 for m in models],
            [m["fraction_with_unsaturated"] >= most for m in models])


def verdict(models: list[dict], most: float = MOST_EXAMPLES) -> Verdict:
    """Does softmax saturate as the paper finds? From :func:`summarize`'s output (one dict per model).

    The paper's two observations: most heads are saturated on most examples (here: more than half of an
    example's heads on more than half of the examples), and almost every example keeps an unsaturated
    head (here: at least ``most`` of the examples). Reproduced when both hold for every H; partly when
    some of them hold; not otherwise.
    """
    if not models:
        raise ValueError("models must hold at least one summarized model")
    heads = [m["heads"] for m in models]
    majority, unsaturated = _observed(models, most)
    status = grade(majority + unsaturated)
    parts = [f"$H = {m['heads']}$: {percent(majority_saturated(m))}" for m in models]
    text = (holds(majority, heads, "more than half of the heads are saturated on most examples",
                  "fewer than half of the heads are saturated on most examples", symbol="H")
            + " (share of examples with more than half of their heads saturated: " + ", ".join(parts) + ")")
    shows = ", ".join(f"$H = {m['heads']}$: {percent(m['fraction_saturated'])} of head-example pairs saturated, "
                      f"{percent(m['fraction_with_unsaturated'])} of examples with an unsaturated head"
                      for m in models)
    return Verdict(status, text, shows)


OBSERVATIONS = ("most heads saturated", "an unsaturated head kept")
"""The paper's two observations on saturation, in the order :func:`verdict` checks them."""


def misses(models: list[dict], most: float = MOST_EXAMPLES) -> dict[str, tuple[int, ...]]:
    """For each of :data:`OBSERVATIONS`, the numbers of heads H (in the order of ``models``) whose model
    does not show it, by :func:`verdict`'s criteria: ``{"most heads saturated": (4,), ...}``. Two runs
    that fail :func:`verdict` in the same way have equal ``misses``."""
    if not models:
        raise ValueError("models must hold at least one summarized model")
    return {name: tuple(m["heads"] for m, hit in zip(models, hits) if not hit)
            for name, hits in zip(OBSERVATIONS, _observed(models, most))}


def misses_text(missed: dict[str, tuple[int, ...]]) -> str:
    """:func:`misses`'s result as a Markdown clause: '*most heads saturated* fails for $H = 4$' (joined by
    'and'; 'both observations hold' when nothing is missed)."""
    parts = [f"*{name}* fails for " + " and ".join(f"$H = {H}$" for H in heads)
             for name, heads in missed.items() if heads]
    return " and ".join(parts) if parts else "both observations hold"


def unsaturated_text(models: list[dict], most: float = MOST_EXAMPLES) -> str:
    """'almost every example keeps ...' or the share that does, as a clause for the prose."""
    heads = [m["heads"] for m in models]
    hits = _observed(models, most)[1]
    shares = ", ".join(f"{percent(m['fraction_with_unsaturated'])} with $H = {m['heads']}$" for m in models)
    return (holds(hits, heads, "almost every example keeps at least one unsaturated head",
                  "many examples have every head saturated", symbol="H") + f" ({shares})")


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results))``."""
    return verdict(summarize(results))


def recorded_finding() -> Verdict:
    """The figure's verdict on the recorded paper run (:func:`recorded_paper_run`, which keeps saturation
    statistics rather than weights): ``verdict(recorded_paper_run()[1])``."""
    return verdict(recorded_paper_run()[1])

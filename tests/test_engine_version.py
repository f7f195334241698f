"""The training engine's numbers are pinned to ENGINE_VERSION (memcap/_version.py).

Cached paper results are used only when they were made by the current ENGINE_VERSION, so a change to the
engine's numerics must bump it. This test holds the numbers of a small reference run (float64 on the CPU,
every default of TrainConfig and most of the specs' defaults, both models with their variants, a capacity
search) made with the recorded engine version, and fails when the engine produces other numbers:

* a deliberate change: bump ``ENGINE_VERSION`` in memcap/_version.py, then rewrite the reference with
  ``python -m tests.test_engine_version --write`` and commit both;
* otherwise: the change altered results it should not have.

Numbers are compared with a relative tolerance of 1e-7 rather than hashed: float64 reductions may round
differently on other CPUs, while a real change in the engine moves them far more.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from memcap import ENGINE_VERSION
from memcap.experiments.sweep import capacity_job, run_job, train_job
from memcap.train import AoTSpec, MHASpec, TrainConfig

REFERENCE = Path(__file__).parent / "data" / "engine_reference.json"
RTOL = 1e-7


def reference_run() -> dict:
    """The reference numbers: per model loss, accuracy, steps and weight norm; a capacity search's result."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        config = TrainConfig(steps=60, batch_size=8, eval_every=20, dtype="float64", device="cpu")
        specs = [MHASpec(heads=2, context_size=3, examples=10, dim=8, classes=5),
                 MHASpec(heads=1, context_size=3, examples=6, dim=4, head_dim=2, value_dim=2, classes=None,
                         out_dim=2, shared=False, embedding=False, seed=1, data_seed=2),
                 AoTSpec(heads=2, head_dim=2, dim=4, vocab=5),
                 AoTSpec(heads=1, head_dim=2, dim=3, vocab=4, mlp_width=3, seed=3),
                 AoTSpec(heads=2, head_dim=2, dim=3, vocab=4, examples=10, shared_compression=True, seed=4)]
        train = run_job(train_job(specs, config, keep_params=True, seed=5))
        capacity = run_job(capacity_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=4)], [2, 5, 12, 16],
                                        config, rounds=1, points=2))
    finally:
        torch.set_num_threads(threads)
    models = []
    for i, record in enumerate(train["records"]):
        weights = [np.asarray(w, dtype=np.float64).ravel() for k, w in sorted(train["arrays"].items())
                   if k.startswith(f"{i}/")]
        models.append({"loss": record["loss"], "accuracy": record["accuracy"], "steps": record["steps"],
                       "stop_step": record["stop_step"],
                       "weight_norm": float(np.sqrt(sum(float(np.sum(w * w)) for w in weights)))})
    found = capacity["capacities"][0]
    return {"models": models, "history_accuracy": train["history"]["accuracy"],
            "capacity": {"capacity": found["capacity"], "upper": found["upper"], "tried": found["tried"]}}


def _differences(got, want, where: str = "") -> list[str]:
    """Paths at which ``got`` and ``want`` differ (numbers beyond RTOL, anything else exactly)."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{where}: keys {sorted(got)} != {sorted(want)}"]
        return [d for k in want for d in _differences(got[k], want[k], f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: length {len(got)} != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in _differences(g, w, f"{where}[{i}]")]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if math.isnan(want) and math.isnan(got):
            return []
        return [] if math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-12) else [f"{where}: {got!r} != {want!r}"]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


def test_engine_numbers_match_the_reference_of_this_engine_version():
    stored = json.loads(REFERENCE.read_text(encoding="utf-8"))
    got = reference_run()
    diffs = _differences(got, stored["numbers"])
    if stored["engine_version"] != ENGINE_VERSION:
        pytest.fail(f"ENGINE_VERSION is {ENGINE_VERSION} but {REFERENCE.name} holds the numbers of engine version "
                    f"{stored['engine_version']}: rewrite it with `python -m tests.test_engine_version --write`")
    assert not diffs, (
        f"the training engine's numbers changed ({len(diffs)} differences, e.g. {diffs[:3]}). Cached results of "
        f"engine version {ENGINE_VERSION} would no longer match what the code computes: bump ENGINE_VERSION in "
        "memcap/_version.py and rewrite the reference with `python -m tests.test_engine_version --write`")


def test_reference_run_exercises_what_it_claims():
    """The reference is not vacuous: models trained (loss moved, weights non-zero), the capacity was bracketed."""
    numbers = json.loads(REFERENCE.read_text(encoding="utf-8"))["numbers"]
    assert len(numbers["models"]) == 5 and all(m["steps"] > 0 and m["weight_norm"] > 0 for m in numbers["models"])
    assert numbers["models"][1]["accuracy"] is None                   # the regression model
    assert len(numbers["history_accuracy"]) == 3                      # evaluations at steps 20, 40, 60
    assert len(numbers["capacity"]["tried"]) >= 4


def test_comparison_catches_a_small_change():
    numbers = json.loads(REFERENCE.read_text(encoding="utf-8"))["numbers"]
    changed = json.loads(json.dumps(numbers))
    changed["models"][2]["loss"] *= 1 + 1e-5
    assert _differences(changed, numbers) == [f".models[2].loss: {changed['models'][2]['loss']!r} != "
                                              f"{numbers['models'][2]['loss']!r}"]
    assert _differences(numbers, numbers) == []


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.test_engine_version --write   (after bumping ENGINE_VERSION)")
    REFERENCE.write_text(json.dumps({"engine_version": ENGINE_VERSION, "numbers": reference_run()}, indent=1) + "\n",
                         encoding="utf-8")
    print(f"wrote {REFERENCE} for engine version {ENGINE_VERSION}")

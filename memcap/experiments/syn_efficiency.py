"""Part III, for practitioners: parameters per memorized example, architecture by architecture.

One-layer models of about the same size, each trained by a capacity search (largest training set
memorized entirely, :func:`memcap.train.capacity_search`): Mahdavi et al.'s attention layer on real
vectors (100 classes), and on token sequences Dana et al.'s AoT of Eq. (2), the same AoT with half as many
heads of twice the dimension (the same number of weights), the AoT whose heads share one d -> d_h
compression, and one head followed by a GELU MLP of the same parameter count (Dana et al.,
Section 4.2.1). :func:`summarize` divides each model's trainable weights (all of them, embeddings
included: :func:`memcap.synthesis.engine_param_count`) by its capacity, and by the capacity its paper's
theorem guarantees.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from memcap import bounds, synthesis
from memcap.experiments.sweep import capacity_job
from memcap.train import AoTSpec, MHASpec, TrainConfig, spec_from_dict

NAME = "syn_efficiency"
LABEL = "syn-fig-efficiency"
TITLE = "Parameters per memorized example, five one-layer models"

ARCHITECTURES = ("MHA", "AoT", "AoT, wider heads", "AoT, shared compression", "one head + MLP")
"""Names of the five models, in the order of the tables ("wider heads": H/2 heads of dimension 2 d_h)."""

PAPER = {
    "mha": {"dim": 64, "context_size": 32, "head_dim": 32, "classes": 100, "shared": True},
    "aot": {"vocab": 50, "seq_len": 2, "dim": 10, "head_dim": 5},
    "heads": [4, 16],
    "candidates": [64, 128, 256, 512, 1024, 1536, 2048, 2500],
    "rounds": 3, "points": 3,
    "seeds": [0, 1],
    "mha_train": {"steps": 50_000, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
    "aot_train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: the models of the side-by-side chapter's sweeps, at H = 4.
QUICK = {
    "mha": {"dim": 16, "context_size": 8, "head_dim": 8, "classes": 100, "shared": True},
    "aot": {"vocab": 16, "seq_len": 2, "dim": 8, "head_dim": 2},
    "heads": [4],
    "candidates": [16, 32, 64, 128, 256],
    "rounds": 1, "points": 2,
    "seeds": [0],
    "mha_train": {"steps": 1500, "batch_size": 32, "lr": 2e-2, "eval_every": 100},
    "aot_train": {"steps": 800, "batch_size": 32, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 100},
}


def mlp_width(aot: dict, heads: int) -> int:
    """Width w of the one-head model's MLP that matches the weights of an AoT with ``heads`` heads: the H - 1
    extra heads hold 4 d d_h (H - 1) weights, the MLP 2 w d (Dana et al. match 2d(H - 1) at d_h = d)."""
    return 2 * aot["head_dim"] * (heads - 1)


def specs(g: dict, seed: int) -> list:
    """The models of one seed: per size H (even), the architectures in the order of :data:`ARCHITECTURES`."""
    out = []
    for H in g["heads"]:
        if H % 2:
            raise ValueError(f"heads must be even (the wider-heads AoT has H/2 heads), got {H}")
        wide = {**g["aot"], "head_dim": 2 * g["aot"]["head_dim"]}
        out += [MHASpec(**g["mha"], heads=H, examples=1, seed=seed, data_seed=seed),
                AoTSpec(**g["aot"], heads=H, examples=1, seed=seed, data_seed=seed),
                AoTSpec(**wide, heads=H // 2, examples=1, seed=seed, data_seed=seed),
                AoTSpec(**g["aot"], heads=H, shared_compression=True, examples=1, seed=seed, data_seed=seed),
                AoTSpec(**g["aot"], heads=1, mlp_width=mlp_width(g["aot"], H), examples=1, seed=seed,
                        data_seed=seed)]
    return out


def jobs(profile: str) -> list[dict]:
    """Two capacity searches (the MHA's recipe and the AoTs'), each over every size and seed."""
    g = PAPER if profile == "paper" else QUICK
    every = [s for seed in g["seeds"] for s in specs(g, seed)]
    mha = [s for s in every if isinstance(s, MHASpec)]
    aot = [s for s in every if isinstance(s, AoTSpec)]
    return [capacity_job(mha, g["candidates"], TrainConfig(**g["mha_train"]), rounds=g["rounds"],
                         points=g["points"]),
            capacity_job(aot, g["candidates"], TrainConfig(**g["aot_train"]), rounds=g["rounds"],
                         points=g["points"])]


def architecture(spec, grid: dict | None = None) -> str:
    """Which of :data:`ARCHITECTURES` ``spec`` is (``grid``: the profile's, to tell wider heads apart;
    default :data:`QUICK`)."""
    g = QUICK if grid is None else grid
    if isinstance(spec, MHASpec):
        return ARCHITECTURES[0]
    if spec.mlp_width:
        return ARCHITECTURES[4]
    if spec.shared_compression:
        return ARCHITECTURES[3]
    return ARCHITECTURES[2] if spec.head_dim == 2 * g["aot"]["head_dim"] else ARCHITECTURES[1]


def guarantee(spec) -> int | None:
    """The capacity the architecture's own theorem guarantees: Mahdavi et al.'s H(min(n, d_h) - 1) + 1 for
    the MHA, Dana et al.'s H d_h + d for the AoTs of Eq. (2) (with L >= d; proved for d_h = 1, granted the
    feature-rank conjecture for wider heads, see the chapter on Dana et al.'s Theorem 1), none for the two
    variants."""
    if isinstance(spec, MHASpec):
        return bounds.mha_capacity(spec.heads, spec.context_size, spec.d_h)
    if not spec.mlp_width and not spec.shared_compression:
        return bounds.aot_capacity(spec.heads, spec.head_dim, spec.dim)
    return None


@dataclass(frozen=True)
class Row:
    """One model: its ``architecture``, its number of ``heads`` (for the MLP model: of the AoT it is matched
    to), ``head_dim``,
    trainable ``parameters``, measured ``capacity`` (mean over seeds; ``censored`` if the largest size tried
    was memorized), ``bits`` of label information per example (log2 of the number of classes), the
    theorem's ``guarantee`` (None where no theorem applies), and the weights of the MHA's class ``readout``
    (:func:`memcap.synthesis.readout_weights`; None for the token models)."""

    architecture: str
    heads: int
    head_dim: int
    parameters: int
    capacity: float
    censored: bool
    bits: float
    guarantee: int | None
    readout: int | None = None

    @property
    def size(self) -> int:
        """The number of heads H of the size this model is matched to: ``heads``, but for the wider-heads AoT,
        which has H/2 heads, 2 ``heads``."""
        return 2 * self.heads if self.architecture == ARCHITECTURES[2] else self.heads

    @property
    def per_example(self) -> float:
        """Parameters per memorized example."""
        return self.parameters / self.capacity if self.capacity else math.inf

    @property
    def per_guaranteed(self) -> float | None:
        """Parameters per example the theorem guarantees."""
        return None if self.guarantee is None else self.parameters / self.guarantee

    @property
    def bits_per_parameter(self) -> float:
        """Bits of labels stored per parameter, capacity log2(classes) / parameters."""
        return self.capacity * self.bits / self.parameters


def summarize(results, profile: str | None = None) -> list[Row]:
    """One :class:`Row` per (architecture, size), in the order of :func:`specs`, averaged over seeds."""
    profile = profile or getattr(results, "profile", "quick")
    g = PAPER if profile == "paper" else QUICK
    found: dict[tuple, list[tuple[int, bool]]] = {}
    for c in getattr(results, "capacities", results):
        spec = spec_from_dict(dict(c["spec"]))
        key = (architecture(spec, g), spec.heads, getattr(spec, "mlp_width", 0))
        found.setdefault(key, []).append((int(c["capacity"]), c["upper"] is None))
    rows = []
    for spec in specs(g, g["seeds"][0]):
        key = (architecture(spec, g), spec.heads, getattr(spec, "mlp_width", 0))
        if key not in found:
            raise ValueError(f"no capacity was measured for {key}")
        caps = found[key]
        size = spec.heads if not getattr(spec, "mlp_width", 0) else spec.mlp_width // (2 * spec.head_dim) + 1
        classes = spec.classes if isinstance(spec, MHASpec) else spec.vocab
        rows.append(Row(architecture(spec, g), size, spec.d_h if isinstance(spec, MHASpec) else spec.head_dim,
                        synthesis.engine_param_count(spec),
                        sum(c for c, _ in caps) / len(caps), any(cen for _, cen in caps), math.log2(classes),
                        guarantee(spec), synthesis.readout_weights(spec) if isinstance(spec, MHASpec) else None))
    return rows

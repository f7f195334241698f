"""One valid call of every public memcap function, and which of its arguments bad input can go into.

"Public" means: a function or class named in the ``__all__`` of a module of :data:`PUBLIC_MODULES`
(:func:`public_callables` enumerates them). Every one of them has an entry in :func:`cases`: either a
:class:`Case` (a valid call built on a given device, and the arguments that take tensors, ids, real
numbers or dtypes) or a reason why it takes none of those (:data:`NO_BAD_INPUT`). ``tests/test_api.py``
fails when a public function has neither, so a new function cannot slip in untested.

Used by ``tests/test_bad_inputs.py`` (NaN, inf, empty, wrong dtype, wrong shape into every argument) and
``tests/test_gpu.py`` (the whole API on a second device).
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

PUBLIC_MODULES = (
    "memcap", "memcap.device", "memcap.models", "memcap.data", "memcap.linalg", "memcap.bounds",
    "memcap.construct.mahdavi", "memcap.construct.mahdavi_limits", "memcap.construct.dana", "memcap.train",
    "memcap.fits", "memcap.bench", "memcap.doctor",
)
"""The modules whose ``__all__`` is memcap's public API (``memcap`` itself re-exports some of their names)."""

F64 = torch.float64


@dataclass(frozen=True)
class Case:
    """A valid call of ``fn`` and the arguments bad input can be put into.

    ``build(device)`` returns the keyword arguments of a call that succeeds, with every tensor on
    ``device``. An argument is named by its keyword, or ``"params.W_K"`` for an entry of a dict argument.
    ``tensors``: real-valued tensors/arrays (NaN, inf, empty, wrong dtype, wrong shape); ``ids``: integer
    tensors (float dtype, empty, wrong shape); ``reals``: real numbers (NaN, inf); ``dtypes``: dtype
    arguments (half precision, an integer dtype). ``elementwise``: tensor arguments that may have any
    shape (no "wrong shape" exists for them: elementwise maps, a model's free parameters).
    """

    fn: Callable
    build: Callable[[torch.device], dict]
    tensors: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    reals: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    elementwise: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__qualname__}"


def public_callables() -> dict[str, Callable]:
    """Every function and class in the ``__all__`` of :data:`PUBLIC_MODULES`, by its defining name."""
    found: dict[str, Callable] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__.startswith("memcap"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


NO_BAD_INPUT: dict[str, str] = {
    # where code runs: strings only
    "memcap.device.pick_device": "takes a device name (str), refused unless cuda/mps/cpu (tests/test_device.py)",
    "memcap.device.train_dtype": "takes a device name (str), validated by pick_device",
    "memcap.device.exact_dtype": "takes a device name (str), validated by pick_device",
    "memcap.device.describe": "takes a device name (str), validated by pick_device",
    "memcap.device.report": "takes a device name (str), validated by pick_device",
    # integer sizes only, validated by positive_int (tests of each module)
    "memcap.models.mha_param_count": "integer sizes only",
    "memcap.models.aot_param_count": "integer sizes only",
    "memcap.data.all_sequences": "integer sizes only",
    "memcap.data.random_lookup_table": "integer sizes and a generator only",
    "memcap.construct.dana.identity_hadamard_unembedding": "an integer size only",
    "memcap.bounds.mha_capacity": "integer sizes only",
    "memcap.bounds.mha_capacity_remark1": "integer sizes only",
    "memcap.bounds.mha_shared_rank_bound": "integer sizes only",
    "memcap.bounds.mha_simplex_rank_bound": "integer sizes only",
    "memcap.bounds.mha_param_count": "integer sizes only",
    "memcap.bounds.relu_capacity": "integer sizes only",
    "memcap.bounds.relu_param_count": "integer sizes only",
    "memcap.bounds.aot_capacity": "integer sizes only",
    "memcap.bounds.aot_param_count": "integer sizes only",
    "memcap.bounds.aot_cor1_param_count": "integer sizes only",
    "memcap.bounds.cor2_accuracy": "integer sizes only",
    "memcap.bounds.jl_constant": "integer sizes only",
    "memcap.bounds.kim_param_count": "integer sizes only",
    "memcap.bounds.huben_morris_param_count": "integer sizes only",
    "memcap.bounds.mahdavi_assoc_param_count": "integer sizes only",
    "memcap.bounds.dana_assoc_param_count": "integer sizes only",
    "memcap.train.MHASpec": "integer sizes, seeds and flags only, validated in __post_init__ (tests/test_train.py)",
    "memcap.train.AoTSpec": "integer sizes, seeds and flags only, validated in __post_init__ (tests/test_train.py)",
    "memcap.train.spec_from_dict": "a dict of a spec's fields, validated by MHASpec/AoTSpec",
    "memcap.train.group_by_shape": "a list of specs",
    "memcap.train.train_models": "specs and a TrainConfig, both validated dataclasses",
    "memcap.train.capacity_search": "specs, integer candidates and a TrainConfig",
    "memcap.bench.workload": "a workload name and an integer",
    "memcap.bench.run_bench": "workload names and integers (tests/test_cli.py runs it)",
    "memcap.bench.format_bench": "the dict run_bench returns",
    "memcap.doctor.gpu_status": "no arguments",
    "memcap.doctor.run_doctor": "a device name and integers (tests/test_doctor.py runs it)",
    "memcap.doctor.add_subcommand": "an argparse subparsers object",
    # result records: built by memcap from validated inputs, never an input themselves
    "memcap.bounds.Bound": "a registry record (BOUNDS)",
    "memcap.fits.PolyFit": "the result of poly_fit",
    "memcap.construct.mahdavi.OneHead": "the result of claim1_head / claim2_head",
    "memcap.construct.mahdavi.InductionStep": "a record of key_query_construction",
    "memcap.construct.mahdavi.KeyQueryConstruction": "the result of key_query_construction",
    "memcap.construct.mahdavi.Theorem1Construction": "the result of theorem1_construction",
    "memcap.construct.mahdavi_limits.ReLUFit": "the result of fit_relu",
    "memcap.construct.dana.KLFit": "the result of minimize_kl",
    "memcap.construct.dana.Theorem1AoT": "the result of theorem1_aot",
    "memcap.train.TrainResult": "the result of train_models",
    "memcap.train.CapacityResult": "the result of capacity_search",
}
"""Public callables without tensor, id, real or dtype arguments, with the reason."""


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _mahdavi(dev: torch.device, T: int = 5, n: int = 3, d: int = 6) -> dict:
    """A small Mahdavi task (per-example contexts) in float64 on ``dev``: contexts, queries, labels."""
    g = _gen(1)
    return {"contexts": torch.rand(T, n, d, generator=g, dtype=F64).to(dev),
            "queries": torch.rand(T, d, generator=g, dtype=F64).to(dev),
            "labels": torch.randn(T, generator=g, dtype=F64).to(dev)}


def _context_query(dev: torch.device) -> dict:
    """The contexts and queries of :func:`_mahdavi`."""
    task = _mahdavi(dev)
    return {"contexts": task["contexts"], "queries": task["queries"]}


def _mha(dev: torch.device):
    from memcap.models import init_mha
    return init_mha(2, 6, 3, 2, 2, generator=_gen(2), dtype=F64, device=dev)


def _aot(dev: torch.device):
    from memcap.models import init_aot
    return init_aot(5, 3, 4, 2, 2, generator=_gen(3), dtype=F64, device=dev)


def _tokens(dev: torch.device, count: int = 6, vocab: int = 5, seq_len: int = 3) -> torch.Tensor:
    return torch.randint(vocab, (count, seq_len), generator=_gen(4)).to(dev)


def _noisy(dev: torch.device, vocab: int = 4, seq_len: int = 2, entropy: float = 0.5) -> torch.Tensor:
    from memcap.data import next_token_distribution
    return next_token_distribution(vocab, seq_len, entropy=entropy, generator=_gen(5), device=dev)


def _logits(dev: torch.device, rows: int = 4, n: int = 5, seed: int = 6) -> torch.Tensor:
    return torch.randn(rows, n, generator=_gen(seed), dtype=F64).to(dev)


def cases() -> dict[str, Case]:
    """Every public callable with bad-input arguments, by its defining name."""
    from memcap import bounds, data, fits, linalg, models, train
    from memcap.construct import dana, mahdavi
    from memcap.construct import mahdavi_limits as ml

    def model_params(dev):
        return {**dict(zip(models.mha_parameter_names, _mha(dev).parameters()))}

    def mha_inputs(dev):
        task = _mahdavi(dev)
        p = _mha(dev)
        return {"W_K": p.W_K, "W_Q": p.W_Q, "contexts": task["contexts"], "queries": task["queries"]}

    def theorem1(dev):
        return {**_mahdavi(dev, T=7, n=3, d=6), "heads": 3, "head_dim": 3}

    def relu_xy(dev):
        g = _gen(7)
        return {"inputs": torch.randn(6, 2, generator=g, dtype=F64).to(dev),
                "labels": torch.randn(6, 1, generator=g, dtype=F64).to(dev)}

    def association(dev):
        tokens, targets = data.association_task(5, 2, count=8, generator=_gen(8), device=dev)
        return tokens, targets

    def stacked_mha(dev):
        spec = train.MHASpec(heads=2, context_size=3, examples=4, dim=4, classes=3, embedding=False)
        p = train._init_one(spec)
        return {"params": {k: v[None].to(dev) for k, v in p.items()},
                "contexts": torch.rand(1, 3, 4, generator=_gen(9), dtype=F64).to(dev),
                "queries": torch.rand(1, 5, 4, generator=_gen(10), dtype=F64).to(dev)}

    def stacked_aot(dev):
        p = train._init_one(train.AoTSpec(heads=2, head_dim=2, dim=3, vocab=5, seq_len=2))
        return {"params": {k: v[None].to(dev) for k, v in p.items()},
                "tokens": torch.randint(5, (1, 6, 2), generator=_gen(11)).to(dev)}

    def trained(dev):
        spec = train.MHASpec(heads=2, context_size=3, examples=4, dim=4, classes=3)
        return {"spec": spec, "params": {k: v.numpy() for k, v in train._init_one(spec).items()},
                "device": str(dev)}

    def encoder(dev):
        g = _gen(12)
        return dana.SequenceEncoder(torch.randn(6, 3, generator=g, dtype=F64).to(dev),
                                    torch.randn(5, 3, generator=g, dtype=F64).to(dev))

    def enc_tokens(dev):
        return torch.tensor([[k // 6, k % 6] for k in range(5)]).to(dev)

    def xy(dev):
        return {"x": np.arange(6.0), "y": np.array([0.1, 0.3, 0.5, 0.8, 1.0, 1.0])}

    listed = [
        # memcap.models
        Case(models.MHAParams, model_params, tensors=models.mha_parameter_names),
        Case(models.init_mha, lambda dev: {"heads": 2, "dim": 4, "head_dim": 2, "value_dim": 1, "out_dim": 1,
                                           "device": dev}, dtypes=("dtype",)),
        Case(models.mha_scores, mha_inputs, tensors=("W_K", "W_Q", "contexts", "queries")),
        Case(models.mha_attention, mha_inputs, tensors=("W_K", "W_Q", "contexts", "queries")),
        Case(models.mha_features, mha_inputs, tensors=("W_K", "W_Q", "contexts", "queries")),
        Case(models.mha_features_from_attention,
             lambda dev: {"theta": torch.full((5, 2, 3), 1 / 3, dtype=F64).to(dev),
                          "contexts": _mahdavi(dev)["contexts"]}, tensors=("theta", "contexts")),
        Case(models.mha_forward, lambda dev: {"params": _mha(dev), "contexts": _mahdavi(dev)["contexts"],
                                              "queries": _mahdavi(dev)["queries"]}, tensors=("contexts", "queries")),
        Case(models.AoTParams, lambda dev: dict(zip(models.aot_parameter_names, _aot(dev).parameters())),
             tensors=models.aot_parameter_names),
        Case(models.init_aot, lambda dev: {"vocab": 5, "seq_len": 2, "dim": 3, "heads": 1, "head_dim": 2,
                                           "device": dev}, dtypes=("dtype",)),
        *[Case(fn, lambda dev: {"params": _aot(dev), "tokens": _tokens(dev)}, ids=("tokens",))
          for fn in (models.aot_embed, models.aot_attention, models.aot_head_inputs, models.aot_sequence_embedding,
                     models.aot_forward)],
        # memcap.data
        Case(data.sinusoidal_positions, lambda dev: {"length": 4, "dim": 6, "device": dev}, dtypes=("dtype",)),
        Case(data.MemorizationTask, lambda dev: {"contexts": _mahdavi(dev)["contexts"],
                                                 "queries": _mahdavi(dev)["queries"],
                                                 "labels": torch.tensor([0, 1, 2, 1, 0]).to(dev), "classes": 3},
             tensors=("contexts", "queries"), ids=("labels",)),
        Case(data.mahdavi_task, lambda dev: {"examples": 4, "context_size": 2, "dim": 3, "device": dev},
             dtypes=("dtype",)),
        Case(data.association_task, lambda dev: {"vocab": 3, "seq_len": 2, "count": 4,
                                                 "table": torch.randint(3, (3, 3), generator=_gen()).to(dev)},
             ids=("table",)),
        Case(data.lookup_noise_for_entropy, lambda dev: {"vocab": 4, "entropy": 0.5}, reals=("entropy",)),
        Case(data.next_token_distribution, lambda dev: {"vocab": 3, "seq_len": 2, "entropy": 0.5, "device": dev,
                                                        "table": torch.randint(3, (3, 3), generator=_gen()).to(dev)},
             ids=("table",), reals=("entropy",), dtypes=("dtype",)),
        Case(data.entropy, lambda dev: {"probs": _noisy(dev)}, tensors=("probs",)),
        Case(data.kl_divergence, lambda dev: {"p": _noisy(dev), "logits": _logits(dev, 16, 4)},
             tensors=("p", "logits")),
        # memcap.linalg
        Case(linalg.rank, lambda dev: {"matrix": _logits(dev), "tol": 1e-9, "rtol": 1e-9},
             tensors=("matrix",), reals=("tol", "rtol")),
        Case(linalg.kruskal_rank, lambda dev: {"vectors": _logits(dev), "tol": 1e-9},
             tensors=("vectors",), reals=("tol",)),
        Case(linalg.randomized_kruskal_rank, lambda dev: {"vectors": _logits(dev, 6, 4), "candidates": [2, 3],
                                                          "subsets": 20, "threshold": 0.9, "tol": 1e-9},
             tensors=("vectors",), reals=("threshold", "tol")),
        Case(linalg.in_general_position, lambda dev: {"vectors": _logits(dev), "tol": 1e-9},
             tensors=("vectors",), reals=("tol",)),
        *[Case(fn, lambda dev: {"queries": _logits(dev, 6, 4), "context_size": 3, "tol": 1e-9, "threshold": 0.9},
               tensors=("queries",), reals=("tol", "threshold"))
          for fn in (linalg.check_assumption_1, linalg.satisfies_assumption_1)],
        *[Case(fn, lambda dev: {"contexts": _mahdavi(dev)["contexts"], "tol": 1e-9}, tensors=("contexts",),
               reals=("tol",)) for fn in (linalg.check_assumption_2, linalg.satisfies_assumption_2)],
        *[Case(fn, lambda dev: {"contexts": _mahdavi(dev, T=6)["contexts"], "queries": _mahdavi(dev, T=6)["queries"],
                                "tol": 1e-9, "threshold": 0.9},
               tensors=("contexts", "queries"), reals=("tol", "threshold"))
          for fn in (linalg.check_assumption_3, linalg.satisfies_assumption_3)],
        # memcap.bounds: the functions of real arguments
        Case(bounds.accuracy_from_memorized, lambda dev: {"memorized": 3.0, "vocab": 5, "associations": 10},
             reals=("memorized",)),
        Case(bounds.cor2_capacity_from_accuracy, lambda dev: {"accuracy": 0.5, "vocab": 5, "associations": 10},
             reals=("accuracy",)),
        Case(bounds.thm2_lambda_bound, lambda dev: {"vocab": 4, "dim": 1000, "entropy": 0.5}, reals=("entropy",)),
        Case(bounds.thm2_kl_bound_term, lambda dev: {"vocab": 4, "dim": 1000, "error_prob": 0.1, "entropy": 0.5,
                                                     "tv_distance": 0.2},
             reals=("error_prob", "entropy", "tv_distance")),
        Case(bounds.thm2_kl_term_with_constant, lambda dev: {"vocab": 4, "constant": 0.2, "error_prob": 0.1,
                                                             "entropy": 0.5, "tv_distance": 0.2},
             reals=("constant", "error_prob", "entropy", "tv_distance")),
        Case(bounds.thm1_excess_divergence, lambda dev: {"constant": 1.5, "epsilon": 0.1, "logits_norm": 2.0},
             reals=("constant", "epsilon", "logits_norm")),
        Case(bounds.thm2_simplified_kl_bound, lambda dev: {"vocab": 4, "dim": 1000, "error_prob": 0.1,
                                                           "mean_entropy": 0.5}, reals=("error_prob", "mean_entropy")),
        # memcap.construct.mahdavi
        Case(mahdavi.RankOneSeparator, lambda dev: {"u": _logits(dev)[0], "v": _logits(dev)[1], "vanish_on": (0,)},
             tensors=("u", "v")),
        Case(mahdavi.rank_one_separator, lambda dev: {**_context_query(dev), "vanish_on": [0]},
             tensors=("contexts", "queries")),
        Case(mahdavi.top_gap, lambda dev: {"logits": _logits(dev)}, tensors=("logits",), elementwise=("logits",)),
        Case(mahdavi.softmax_limit, lambda dev: {"logits_plus": _logits(dev)}, tensors=("logits_plus",),
             elementwise=("logits_plus",)),
        Case(mahdavi.saturation_bound, lambda dev: {"logits_star": _logits(dev), "logits_plus": _logits(dev, seed=7),
                                                    "c": 3.0}, tensors=("logits_star", "logits_plus"), reals=("c",)),
        Case(mahdavi.saturation_scale, lambda dev: {"logits_star": _logits(dev), "logits_plus": _logits(dev, seed=7),
                                                    "delta": 0.1},
             tensors=("logits_star", "logits_plus"), reals=("delta",)),
        Case(mahdavi.saturation_error, lambda dev: {"logits_star": _logits(dev), "logits_plus": _logits(dev, seed=7),
                                                    "c": 3.0}, tensors=("logits_star", "logits_plus"), reals=("c",)),
        Case(mahdavi.finite_delta, lambda dev: {"sigma_min": 0.5, "coefficient_norm": 2.0, "token_norm": 1.5,
                                                "previous": 3, "margin": 0.5},
             reals=("sigma_min", "coefficient_norm", "token_norm", "margin")),
        Case(mahdavi.claim1_head, lambda dev: {**_context_query(dev), "examples": [0, 1],
                                               "theta": torch.full((2, 3), 1 / 3, dtype=F64).to(dev), "head_dim": 3},
             tensors=("contexts", "queries", "theta")),
        Case(mahdavi.claim2_head, lambda dev: {**_context_query(dev), "examples": [0],
                                               "theta": torch.full((1, 3), 1 / 3, dtype=F64).to(dev), "head_dim": 3,
                                               "delta": 0.1},
             tensors=("contexts", "queries", "theta"), reals=("delta",)),
        *[Case(fn, lambda dev: {k: v for k, v in theorem1(dev).items() if k != "labels"},
               tensors=("contexts", "queries"))
          for fn in (mahdavi.key_query_construction, mahdavi.key_query_for_rank)],
        Case(mahdavi.readout_weights, lambda dev: {"features": mahdavi.key_query_construction(
            **{k: v for k, v in theorem1(dev).items() if k != "labels"}).features, "labels": theorem1(dev)["labels"],
            "heads": 3}, tensors=("features", "labels")),
        *[Case(fn, theorem1, tensors=("contexts", "queries", "labels"))
          for fn in (mahdavi.theorem1_construction, mahdavi.memorize)],
        Case(mahdavi.remark1_capacity, lambda dev: {"queries": _mahdavi(dev)["queries"], "context_size": 3,
                                                    "heads": 2, "head_dim": 3}, tensors=("queries",)),
        # memcap.construct.mahdavi_limits
        *[Case(fn, mha_inputs, tensors=("W_K", "W_Q", "contexts", "queries"))
          for fn in (ml.attention_matrix,)],
        Case(ml.rank_by_heads, lambda dev: {**mha_inputs(dev), "tol": 1e-9},
             tensors=("W_K", "W_Q", "contexts", "queries"), reals=("tol",)),
        Case(ml.simplex_data, lambda dev: {"examples": 3, "context_size": 2, "dim": 4, "coordinate_sum": 2.0,
                                           "device": dev}, reals=("coordinate_sum",), dtypes=("dtype",)),
        Case(ml.ReLUParams, lambda dev: {"W_1": _logits(dev, 2, 3), "b_1": _logits(dev, 1, 3)[0],
                                         "W_2": _logits(dev, 3, 1), "b_2": _logits(dev, 1, 1)[0]},
             tensors=("W_1", "b_1", "W_2", "b_2")),
        Case(ml.relu_forward, lambda dev: {"params": ml.ReLUParams(_logits(dev, 2, 3), _logits(dev, 1, 3)[0],
                                                                   _logits(dev, 3, 1), _logits(dev, 1, 1)[0]),
                                           "inputs": relu_xy(dev)["inputs"]}, tensors=("inputs",)),
        Case(ml.fcn_inputs, lambda dev: {"contexts": _mahdavi(dev)["contexts"], "queries": _mahdavi(dev)["queries"]},
             tensors=("contexts", "queries")),
        Case(ml.relu_hard_dataset, lambda dev: {"context_size": 2, "dim": 3, "hidden": 1, "device": dev},
             dtypes=("dtype",)),
        Case(ml.fit_relu, lambda dev: {**relu_xy(dev), "hidden": 2, "restarts": 2, "steps": 3, "lr": 0.01,
                                       "checkpoints": 1}, tensors=("inputs", "labels"), reals=("lr",)),
        Case(ml.activation_patterns, lambda dev: {"inputs": relu_xy(dev)["inputs"][:5, :1]}, tensors=("inputs",)),
        Case(ml.relu_residual_lower_bound, lambda dev: {"inputs": relu_xy(dev)["inputs"][:5, :1],
                                                        "labels": relu_xy(dev)["labels"][:5], "hidden": 1},
             tensors=("inputs", "labels")),
        Case(ml.mean_mixing_layer, lambda dev: {"dim": 3, "device": dev}, dtypes=("dtype",)),
        Case(ml.apply_self_attention, lambda dev: {"params": ml.mean_mixing_layer(6, device=dev),
                                                   "contexts": _mahdavi(dev)["contexts"],
                                                   "queries": _mahdavi(dev)["queries"]},
             tensors=("contexts", "queries")),
        Case(ml.cls_token_data, lambda dev: {"examples": 3, "context_size": 2, "dim": 4, "device": dev},
             dtypes=("dtype",)),
        # memcap.construct.dana
        Case(dana.check_full_support, lambda dev: {"probs": _noisy(dev)}, tensors=("probs",)),
        Case(dana.association_targets, lambda dev: {"probs": _noisy(dev, entropy=0.0)}, tensors=("probs",)),
        Case(dana.SequenceEncoder, lambda dev: {"unembedding": encoder(dev).unembedding,
                                                "embedding": encoder(dev).embedding},
             tensors=("unembedding", "embedding")),
        Case(dana.expected_kl, lambda dev: {"probs": _noisy(dev), "logits": _logits(dev, 16, 4),
                                            "prior": torch.full((16,), 1 / 16, dtype=F64).to(dev)},
             tensors=("probs", "logits", "prior")),
        Case(dana.minimize_kl, lambda dev: {"logits_fn": lambda p: p["L"],
                                            "init": {"L": torch.zeros(16, 4, dtype=F64).to(dev)},
                                            "probs": _noisy(dev), "steps": 2, "lr": 0.1},
             tensors=("init.L", "probs"), reals=("lr",), elementwise=("init.L",)),
        Case(dana.best_sequence_encoder, lambda dev: {"probs": _noisy(dev), "dim": 2, "steps": 2, "lr": 0.1,
                                                      "prior": torch.full((16,), 1 / 16, dtype=F64).to(dev)},
             tensors=("probs", "prior"), reals=("lr",)),
        Case(dana.fit_aot, lambda dev: {"tokens": data.all_sequences(4, 2, device=dev), "probs": _noisy(dev),
                                        "dim": 2, "heads": 1, "head_dim": 1, "steps": 2, "lr": 0.1},
             ids=("tokens",), tensors=("probs",), reals=("lr",)),
        Case(dana.exact_sequence_encoder, lambda dev: {"probs": _noisy(dev)}, tensors=("probs",)),
        Case(dana.circle_sequence_encoder, lambda dev: {"targets": association(dev)[1], "vocab": 5, "scale": 2.0},
             ids=("targets",), reals=("scale",)),
        Case(dana.lemma2_params, lambda dev: {"vocab": 5, "seq_len": 2, "dim": 3, "heads": 2, "head_dim": 2,
                                              "scales": torch.tensor([1.0, 2.0], dtype=F64).to(dev), "device": dev},
             tensors=("scales",)),
        Case(dana.head_input_matrix, lambda dev: {"params": _aot(dev), "tokens": _tokens(dev)[:4].unique(dim=0)},
             ids=("tokens",)),
        Case(dana.skip_feature_matrix, lambda dev: {"params": _aot(dev), "tokens": _tokens(dev)[:4].unique(dim=0),
                                                    "fake_head_scale": 5.0},
             ids=("tokens",), reals=("fake_head_scale",)),
        Case(dana.most_likely_sequences, lambda dev: {"prior": torch.tensor([0.5, 0.3, 0.2], dtype=F64).to(dev),
                                                      "epsilon": 0.1}, tensors=("prior",), reals=("epsilon",)),
        Case(dana.theorem1_aot, lambda dev: {"encoder": encoder(dev), "tokens": enc_tokens(dev), "heads": 1,
                                             "head_dim": 2, "prior": torch.full((5,), 0.2, dtype=F64).to(dev),
                                             "epsilon": 0.0, "fake_head_scale": 50.0, "draws": 1},
             ids=("tokens",), tensors=("prior",), reals=("epsilon", "fake_head_scale")),
        Case(dana.corollary1_aot, lambda dev: {"tokens": association(dev)[0], "targets": association(dev)[1],
                                               "vocab": 5, "heads": 3, "head_dim": 2, "scale": 1.0},
             ids=("tokens", "targets"), reals=("scale",)),
        Case(dana.gram_deviation, lambda dev: {"unembedding": encoder(dev).unembedding}, tensors=("unembedding",)),
        Case(dana.lookup_sequence_encoder, lambda dev: {
            "probs": data.next_token_distribution(16, 1, entropy=0.5, table=torch.arange(16).to(dev)),
            "targets": torch.arange(16).to(dev),
            "unembedding": dana.identity_hadamard_unembedding(8, device=dev)},
             tensors=("probs", "unembedding"), ids=("targets",)),
        # memcap.train
        Case(train.TrainConfig, lambda dev: {"steps": 3, "lr": 1e-3, "eps": 1e-8, "warmup_fraction": 0.05,
                                             "warmup_start_factor": 0.01},
             reals=("lr", "eps", "warmup_fraction", "warmup_start_factor")),
        Case(train.lr_factor, lambda dev: {"step": torch.arange(5.0).to(dev),
                                           "total_steps": torch.full((5,), 10.0).to(dev),
                                           "warmup_fraction": 0.2, "start_factor": 0.1},
             tensors=("step", "total_steps"), reals=("warmup_fraction", "start_factor"),
             elementwise=("step", "total_steps")),
        Case(train.mha_forward_stacked, stacked_mha,
             tensors=tuple(f"params.{n}" for n in models.mha_parameter_names) + ("contexts", "queries")),
        Case(train.aot_forward_stacked, stacked_aot,
             tensors=tuple(f"params.{n}" for n in models.aot_parameter_names), ids=("tokens",)),
        Case(train.trained_attention, trained, tensors=tuple(f"params.{n}" for n in ("W_K", "W_Q", "W_E", "b_E"))),
        # memcap.fits
        Case(fits.r_squared, lambda dev: {"y": xy(dev)["y"], "y_hat": xy(dev)["y"] * 0.9}, tensors=("y", "y_hat")),
        Case(fits.poly_fit, lambda dev: {**xy(dev), "degree": 2}, tensors=("x", "y")),
        Case(fits.linear_fit, xy, tensors=("x", "y")),
        Case(fits.non_saturated, lambda dev: {**xy(dev), "ceiling": 0.99, "floor": 0.0}, tensors=("x", "y"),
             reals=("ceiling", "floor")),
    ]
    return {case.name: case for case in listed}

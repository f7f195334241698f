"""memcap: the library behind the executable textbook on the memorization capacity of attention.

The front door: the functions a researcher needs are importable from ``memcap`` itself (``__all__``;
each is loaded on first use, so ``import memcap`` stays light):

* Mahdavi et al. (2024): ``memorize`` and ``theorem1_construction`` (Theorem 1's weights and their
  certificate, :mod:`memcap.construct.mahdavi`), ``mha_forward`` (the model), ``mahdavi_task`` (their
  synthetic data), ``kruskal_rank``, ``rank`` and ``check_assumption_1`` / ``_2`` / ``_3`` (the data
  assumptions, on your own embeddings, :mod:`memcap.linalg`), ``mha_capacity`` (H(min(n, d_h) - 1) + 1).
* Dana et al. (2024): ``corollary1_aot`` (an AoT that memorizes T0 <= H d_h + 2 associations,
  :mod:`memcap.construct.dana`), ``aot_forward``, ``association_task``,
  ``aot_capacity`` (Dana et al.'s count H d_h + d; see its docstring).
* Training many small models as one tensor program (:mod:`memcap.train`): ``MHASpec``, ``AoTSpec``,
  ``TrainConfig``, ``train_models``, ``capacity_search``.
* Where code runs: ``pick_device``, and ``run_doctor`` (``python -m memcap doctor``) to check a device.

The same input rules hold everywhere: tensors, NumPy arrays or nested lists (converted once, at the
boundary); finite values only; float32 or float64 (half precision is refused); ``generator=None`` means a
fresh generator seeded with 0; results live on the device of the tensor inputs, else on ``pick_device()``.
The README's "Use the library" section shows three tested examples.

The package holds three concerns, one place each (``tests/test_layout.py`` checks the import rules:
the science never imports the other two; the real-model code never imports the experiments):

1. **The science**: ``device`` (where code runs and in which dtype), ``models`` (Mahdavi et al.'s
   multi-head attention layer, Dana et al.'s attention-only transformer), ``data`` (the synthetic tasks),
   ``linalg`` (ranks with an explicit tolerance, Kruskal rank, the papers' assumptions), ``bounds`` (every
   closed form, once, as SymPy expressions and numeric functions), ``fits`` (the papers' least-squares
   fits), ``certify`` (exact rank certificates), ``lookup`` (Dana et al.'s Theorem 2), ``synthesis`` (the
   two papers side by side, Part III), ``profiles`` (``quick`` or ``paper``), ``plotting`` (the figure
   style), ``notation`` (how numbers are written), ``doctor`` (checks this machine's device); and three
   subpackages: ``construct/`` (proofs as programs: the weights each proof says exist), ``train/`` (the
   stacked training engine) and ``experiments/`` (one module per training figure, with ``sweep``, the
   results cache and executors, and ``bench``, the engine's timing).

2. **The real-model code**, ``real/``: real data, a tiny ViT, GPT-like and BERT/MiniLM models, and
   Mahdavi et al.'s assumptions measured on them (their Tables 1 and 3).

3. **The book's machinery**, ``textbook/``: what chapters use to show results (``page``), the Sphinx
   extension (``site``, ``course``), the student edition, the exercise checkers and the grader.
   ``from memcap.exercises import check`` is the students' door into it.
"""
import logging as _logging

from memcap._version import ENGINE_VERSION as ENGINE_VERSION  # re-exported: the single source is _version.py
from memcap._version import __version__ as __version__

# Matplotlib announces on stderr, once per machine, that it is building its font cache. The strict
# book build treats any stderr output as an error, so a first build on a fresh machine would fail on
# that harmless line; raise that logger's threshold instead.
_logging.getLogger("matplotlib.font_manager").setLevel(_logging.ERROR)

_API = {
    # Mahdavi et al.
    "memorize": "memcap.construct.mahdavi",
    "theorem1_construction": "memcap.construct.mahdavi",
    "mha_forward": "memcap.models",
    "mahdavi_task": "memcap.data",
    "kruskal_rank": "memcap.linalg",
    "rank": "memcap.linalg",
    "check_assumption_1": "memcap.linalg",
    "check_assumption_2": "memcap.linalg",
    "check_assumption_3": "memcap.linalg",
    "mha_capacity": "memcap.bounds",
    # Dana et al.
    "corollary1_aot": "memcap.construct.dana",
    "aot_forward": "memcap.models",
    "association_task": "memcap.data",
    "aot_capacity": "memcap.bounds",
    # training
    "MHASpec": "memcap.train",
    "AoTSpec": "memcap.train",
    "TrainConfig": "memcap.train",
    "train_models": "memcap.train",
    "capacity_search": "memcap.train",
    # where code runs
    "pick_device": "memcap.device",
    "run_doctor": "memcap.doctor",
}
"""Top-level name -> the module that defines it (imported on first access; see :func:`__getattr__`)."""

__all__ = list(_API)


def __getattr__(name: str) -> object:
    """Import a name of the top-level API from its module on first access (PEP 562), then cache it."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'memcap' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))

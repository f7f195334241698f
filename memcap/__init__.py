"""memcap: the library behind the executable textbook on the memorization capacity of attention.

Modules, one idea each:

``device``     where code runs (CUDA, else MPS, else CPU) and in which dtype
``models``     Mahdavi et al.'s multi-head attention layer and Dana et al.'s attention-only transformer
``data``       the synthetic tasks of both papers
``linalg``     rank with an explicit tolerance, Kruskal rank, the papers' assumptions
``bounds``     every closed form of both papers, once, as SymPy expressions and numeric functions
``construct``  proofs as programs: the weights each proof says exist
``plotting``   the book's figure style
``fits``       the papers' least-squares fits (line, polynomial, R^2, the non-saturated part)
``train``      the stacked training engine: many tiny models as one tensor program
``sweep``      profiles, the results cache and executors (in-process, threads, processes, Dask)
``experiments`` one module per training figure of both papers, with quick and paper grids
``bench``      stacked engine vs a one-model-at-a-time loop, timed side by side
``edition``    the student edition (solutions stripped) and the exercise index
"""
import logging as _logging

from memcap._version import ENGINE_VERSION as ENGINE_VERSION  # re-exported: the single source is _version.py
from memcap._version import __version__ as __version__

# Matplotlib announces on stderr, once per machine, that it is building its font cache. The strict
# book build treats any stderr output as an error, so a first build on a fresh machine would fail on
# that harmless line; raise that logger's threshold instead.
_logging.getLogger("matplotlib.font_manager").setLevel(_logging.ERROR)

"""Where :mod:`memcap.experiments.sweep` lived before the package was laid out by concern.

Scripts written before the move (``from memcap.sweep import run_job``, e.g. the project's shared
``paper_estimate.py``) keep working: importing this module gives the very module
:mod:`memcap.experiments.sweep`, not a copy.
"""
import sys

from memcap.experiments import sweep as _sweep

sys.modules[__name__] = _sweep

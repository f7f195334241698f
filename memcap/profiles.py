"""The two sizes of every experiment: ``quick`` (the default build) and ``paper`` (the papers' grids).

Which one runs is chosen by the environment variable ``MEMCAP_PROFILE`` or by an explicit ``profile``
argument; :func:`check_profile` is the one place that reads and validates the choice (the experiments,
their sweeps and the real-model measurements all call it).
"""
from __future__ import annotations

import os

__all__ = ["PROFILES", "check_profile", "current_profile"]

PROFILES = ("quick", "paper")
"""``quick``: small grids that run in minutes on a laptop CPU (the default for every build);
``paper``: the papers' grids."""


def current_profile() -> str:
    """The profile selected by the environment variable ``MEMCAP_PROFILE`` ('quick' when unset)."""
    value = os.environ.get("MEMCAP_PROFILE", "").strip() or "quick"
    if value not in PROFILES:
        raise ValueError(f"MEMCAP_PROFILE must be one of {PROFILES}, got {value!r}")
    return value


def check_profile(profile: str | None) -> str:
    """``profile`` if it is one of :data:`PROFILES`; None means :func:`current_profile`."""
    if profile is None:
        return current_profile()
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    return profile

"""A sweep job runner that announces each job as it starts, for tests that must act while a job runs.

``tests/test_cli.py`` points the command line's sweeps at :func:`run_job_announced` and waits for the file
of a job to appear instead of sleeping. It lives in its own module so that worker processes (spawned
process pools, Dask workers) can import it.
"""
from __future__ import annotations

import os
from pathlib import Path

ANNOUNCE_DIR = "MEMCAP_TEST_STARTED_DIR"
"""The environment variable naming the folder where a job's file appears when it starts."""


def started_file(folder: Path, job: dict) -> Path:
    """The file that says ``job`` has started: named by the seed of its first spec."""
    return Path(folder) / f"started-seed-{job['specs'][0]['seed']}"


def run_job_announced(job: dict) -> dict:
    """:func:`memcap.experiments.sweep.run_job`, after creating the job's :func:`started_file` in the folder
    ``$MEMCAP_TEST_STARTED_DIR``."""
    from memcap.experiments.sweep import run_job

    started_file(Path(os.environ[ANNOUNCE_DIR]), job).touch()
    return run_job(job)

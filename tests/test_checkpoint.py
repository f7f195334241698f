"""Checkpoints inside a job (memcap.train.checkpoint): a stopped run goes on with the numbers of an unbroken one."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from memcap.experiments.merge import merged_job
from memcap.experiments.sweep import ResultCache, run_sweep_report, train_job
from memcap.train import AoTSpec, MHASpec, TrainConfig, adam, train_models
from memcap.train.checkpoint import Checkpoint, CheckpointWarning, checkpointing
from memcap.train.loop import CHUNK
from tests.device_sim import GPU, STAND_IN, SecondDevice, label

ROOT = Path(__file__).resolve().parents[1]

# two stacks (an MHA shape and an AoT shape), mini-batches, early stop for some models mid-run
SPECS = [MHASpec(heads=h, context_size=4, examples=12, dim=8, classes=3, seed=h) for h in (1, 2, 4)] + \
        [AoTSpec(heads=h, head_dim=4, dim=4, vocab=4, seed=h) for h in (1, 3)]
CONFIG = TrainConfig(steps=5 * CHUNK, batch_size=8, lr=5e-3, eval_every=100)   # stops at 300, 600 and never


class Stop(Exception):
    """Stands for a kill: raised after a chosen save."""


def _same(a, b) -> None:
    for name in ("accuracy", "loss", "memorized", "steps", "stop_step", "history_steps", "history_accuracy",
                 "history_loss", "compiled"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=name in ("accuracy", "loss",
                                                                                     "history_accuracy",
                                                                                     "history_loss")), name
    for pa, pb in zip(a.params, b.params):
        assert pa.keys() == pb.keys()
        for name in pa:
            assert np.array_equal(pa[name], pb[name]), name


def _stopping_after(monkeypatch, saves: int) -> None:
    """Make the ``saves``-th save of a running stack's state (once written) stop training."""
    real = Checkpoint.save_state

    def save_state(self, key, state):
        real(self, key, state)
        if self.saves == saves:
            raise Stop
    monkeypatch.setattr(Checkpoint, "save_state", save_state)


@pytest.fixture(scope="module")
def unbroken():
    return train_models(SPECS, CONFIG, keep_params=True, compile="never")


@pytest.mark.parametrize("saves", [1, 3, 6], ids=["first stack early", "first stack late", "second stack"])
def test_a_stopped_run_goes_on_with_the_numbers_of_an_unbroken_one(tmp_path, monkeypatch, unbroken, saves):
    assert unbroken.stop_step.max() > 0 and (unbroken.stop_step == -1).any()   # early stop happens mid-run
    with monkeypatch.context() as patch:
        _stopping_after(patch, saves)
        with pytest.raises(Stop), checkpointing(tmp_path, every=0):
            train_models(SPECS, CONFIG, keep_params=True, compile="never")
    assert list(tmp_path.glob("*.step.pt"))
    with checkpointing(tmp_path, every=0) as kept:
        resumed = train_models(SPECS, CONFIG, keep_params=True, compile="never")
    assert kept.resumed and all(s % CHUNK == 0 and s > 0 for s in kept.resumed)
    assert kept.restored == (1 if saves == 6 else 0)   # the first stack had finished before the stop
    _same(resumed, unbroken)
    again = train_models(SPECS, CONFIG, keep_params=True, compile="never", checkpoint=Checkpoint(tmp_path))
    _same(again, unbroken)                               # every stack read back finished


def test_state_saved_by_another_stack_or_config_is_not_used(tmp_path, monkeypatch, unbroken):
    with monkeypatch.context() as patch:
        _stopping_after(patch, 1)
        with pytest.raises(Stop), checkpointing(tmp_path, every=0):
            train_models(SPECS, CONFIG, keep_params=True, compile="never")
    other = TrainConfig(**{**CONFIG.to_dict(), "lr": 1e-2, "betas": CONFIG.betas})
    with checkpointing(tmp_path, every=0) as kept:
        train_models(SPECS, other, keep_params=True, compile="never")
    assert kept.resumed == [] and kept.restored == 0
    with checkpointing(tmp_path, every=0) as kept:   # without the weights: another result, another key
        train_models(SPECS, CONFIG, compile="never")
    assert kept.resumed == [] and kept.restored == 0


def test_an_unreadable_checkpoint_is_ignored_with_a_warning(tmp_path, monkeypatch, unbroken):
    with monkeypatch.context() as patch:
        _stopping_after(patch, 2)
        with pytest.raises(Stop), checkpointing(tmp_path, every=0):
            train_models(SPECS, CONFIG, keep_params=True, compile="never")
    for path in tmp_path.glob("*.pt"):
        path.write_bytes(path.read_bytes()[:100])
    with pytest.warns(CheckpointWarning, match="could not be read"), checkpointing(tmp_path, every=0) as kept:
        again = train_models(SPECS, CONFIG, keep_params=True, compile="never")
    assert kept.resumed == []
    _same(again, unbroken)


def test_checkpoint_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="every must be a number of seconds >= 0"):
        Checkpoint(tmp_path, every=-1)
    with pytest.raises(TypeError, match="folder must be a path"):
        Checkpoint(3)
    with pytest.raises(TypeError, match="checkpoint must be a memcap.train.checkpoint.Checkpoint"):
        train_models(SPECS[:1], CONFIG, checkpoint=str(tmp_path))
    with pytest.raises(ValueError, match="checkpoint_every must be a number of seconds"):
        run_sweep_report("exp", [], checkpoint_every=-5)


READS = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "is_nonzero", "numpy", "__array__"}


class DeviceReads(SecondDevice):
    """The CPU stand-in for a GPU (``tests/device_sim.py``), counting reads of a GPU tensor's values on the
    host (``item``, ``bool``, ``.cpu()``, ...): each one waits until the GPU has done all it was given."""

    reads = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        base = getattr(func, "__name__", "")
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        on_gpu = first is not None and label(first) == GPU
        result = super().__torch_function__(func, types, args, kwargs)
        if on_gpu and (base in READS or base in ("cpu", "to") and isinstance(result, torch.Tensor)
                       and label(result) != GPU):
            self.reads += 1
        return result


@pytest.mark.parametrize("graphs", ["never", "always"], ids=["eager step", "recordable step"])
def test_a_training_step_reads_nothing_back_from_the_device(monkeypatch, graphs):
    """Between two evaluations the loop never waits for the device: twice the steps, the same reads of
    device values on the host (on a GPU each would stall the queue of kernels)."""
    monkeypatch.setenv("MEMCAP_DEVICE", str(STAND_IN))
    monkeypatch.setattr(adam, "_sqrt", torch.sqrt)   # the CPU's square root goes through NumPy: a CPU's only

    def reads(steps: int) -> int:
        config = TrainConfig(steps=steps, batch_size=8, eval_every=10 ** 6)
        with DeviceReads() as mode:
            train_models(SPECS[:2], config, compile="never", cuda_graphs=graphs)
        return mode.reads
    few = reads(CHUNK)
    assert few > 0                                   # the counter sees the reads of setup and evaluation
    assert reads(2 * CHUNK) == few


_SWEEP = textwrap.dedent("""
    import sys, json
    from memcap.experiments.sweep import ResultCache, run_sweep_report
    jobs = json.loads(sys.argv[2])
    report = run_sweep_report("exp", jobs, cache=ResultCache(sys.argv[1]), checkpoint_every=0, merge=int(sys.argv[3]))
    print(json.dumps([m.get("resumed") for m in report.manifests]))
""")


@pytest.mark.parametrize("merge", [1, 2], ids=["one job", "two jobs merged"])
def test_a_sweep_killed_mid_job_goes_on_from_its_checkpoint(tmp_path, merge):
    """SIGKILL while a job trains: its checkpoint stays beside the cache entry, and the same sweep run again
    goes on from it, gives the result of an unbroken run, says so in the manifest and removes the checkpoint.
    Two jobs merged into one run (``merge``): the run's checkpoint, and each job's result as an unbroken
    merged run gives it."""
    config = TrainConfig(steps=60 * CHUNK, batch_size=8, lr=3e-2, eval_every=CHUNK, early_stop=False)
    jobs = [train_job(SPECS[:2], config, keep_params=True)] if merge == 1 else \
        [train_job(SPECS[i:i + 1], config, keep_params=True) for i in range(2)]
    cache = ResultCache(tmp_path / "cache")
    folder = cache.checkpoint_folder("exp", merged_job(jobs))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-c", _SWEEP, str(cache.root), json.dumps(jobs), str(merge)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(folder.glob("*.step.pt")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert list(folder.glob("*.step.pt")), "no checkpoint appeared"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert {cache.lookup("exp", job).status for job in jobs} == {"missing"}
    assert {status for status, *_ in cache.entries("exp")} <= {"checkpoint", "partial"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for resumed in json.loads(done.stdout.strip().splitlines()[-1]):
        assert resumed is not None and resumed["resumed_at_steps"] and resumed["resumed_at_steps"][0] > 0
        assert resumed["earlier_seconds"] > 0
    assert not folder.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unbroken = run_sweep_report("exp", jobs, cache=ResultCache(tmp_path / "fresh"), merge=merge).results
    for job, fresh in zip(jobs, unbroken):
        stored = cache.get("exp", job)
        assert stored["records"] == fresh["records"] and stored["history"] == fresh["history"]
        assert stored["arrays"].keys() == fresh["arrays"].keys()
        assert all(np.array_equal(stored["arrays"][k], fresh["arrays"][k]) for k in fresh["arrays"])


def test_prune_removes_checkpoints_of_another_engine_version_only(tmp_path):
    cache = ResultCache(tmp_path)
    job = train_job(SPECS[:1], TrainConfig(steps=5))
    current = cache.checkpoint_folder("exp", job)
    old = current.with_name("engine-1.checkpoint")
    for folder in (current, old):
        folder.mkdir(parents=True)
        (folder / "abc.step.pt").write_bytes(b"x")
    statuses = {path.parent.name: status for status, path, _, _ in cache.entries("exp")}
    assert statuses == {current.name: "checkpoint", old.name: "stale"}
    removed = cache.prune("exp")
    assert removed == [old / "abc.step.pt"] and not old.exists() and (current / "abc.step.pt").exists()


def test_the_sweep_command_checks_its_checkpoint_interval(capsys):
    from memcap.__main__ import main

    for bad, why in (("-1", "a number of seconds >= 0"), ("soon", "a number of seconds >= 0"),
                     ("inf", "a finite number of seconds")):
        with pytest.raises(SystemExit) as stop:
            main(["sweep", "dana_fig4", "--checkpoint-every", bad])
        assert stop.value.code == 2
        assert f"--checkpoint-every: must be {why}" in capsys.readouterr().err

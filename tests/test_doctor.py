"""``python -m memcap doctor`` (memcap/doctor.py): it reports, checks, benchmarks, and fails loudly."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import torch

from memcap import doctor
from memcap.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def test_doctor_passes_on_the_cpu_and_says_whether_a_gpu_was_found(one_thread):
    lines: list[str] = []
    assert doctor.run_doctor("cpu", bench_models=2, bench_steps=3, out=lines.append)
    text = "\n".join(lines)
    assert text.startswith("Ran on cpu")
    if not torch.cuda.is_available():
        assert "no GPU found" in text and "checking the CPU path" in text
    assert sum(line.startswith("ok ") for line in lines) == len(doctor.CHECKS)
    assert "memcap bench: 2 models x 3 steps on cpu" in text and lines[-1] == "doctor: all checks passed"


def test_a_failing_check_fails_the_doctor(monkeypatch, capsys):
    def broken(dev):
        raise AssertionError("max |y_hat - y| = 1e-2")

    monkeypatch.setattr(doctor, "CHECKS", doctor.CHECKS[:1] + (("a broken check", broken),))
    assert main(["doctor", "--device", "cpu", "--no-bench"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  a broken check: AssertionError: max |y_hat - y| = 1e-2" in out
    assert "ok    Mahdavi et al., Theorem 1 construction" in out and "SOME CHECKS FAILED" in out


def _doctor(*flags: str, env: dict[str, str] | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    """Run the doctor (or ``code``) in a fresh interpreter with ``flags`` (e.g. ``-O``), one torch thread."""
    command = ["-c", code] if code else ["-m", "memcap", "--threads", "1", "doctor", "--no-bench"]
    return subprocess.run([sys.executable, *flags, *command], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_the_doctor_accepts_a_second_name_of_its_device():
    """``cpu:0`` is ``cpu``, as ``cuda`` is ``cuda:0``: the device's weights are where they were asked to be."""
    proc = _doctor(env={"MEMCAP_DEVICE": "cpu:0"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("Ran on cpu:0") and "doctor: all checks passed" in proc.stdout


def test_a_failing_check_fails_the_doctor_under_python_O():
    """``python -O`` strips ``assert``: the checks must fail by other means. Here Theorem 1's construction is
    held to a tolerance it cannot meet (a negative one), so its check must report FAIL and exit 1."""
    code = ("import sys; from memcap import doctor; doctor._tolerance = lambda dev: -1.0; "
            "sys.exit(0 if doctor.run_doctor('cpu', run_benchmark=False) else 1)")
    proc = _doctor("-O", code=code)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL  Mahdavi et al., Theorem 1 construction: max |y_hat - y| =" in proc.stdout
    assert "doctor: SOME CHECKS FAILED" in proc.stdout


def test_the_doctor_checks_without_assert():
    tree = ast.parse((ROOT / "memcap" / "doctor.py").read_text())
    assert not [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]

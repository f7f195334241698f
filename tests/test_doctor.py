"""``python -m memcap doctor`` (memcap/doctor.py): it reports, checks, benchmarks, and fails loudly."""
from __future__ import annotations

import torch

from memcap import doctor
from memcap.__main__ import main


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

"""Tests of tests/engine_ab.py: an earlier commit's engine imported beside this one, timed interleaved."""
from __future__ import annotations

import re
import sys

import pytest

from tests import engine_ab


@pytest.fixture
def base_on_path(tmp_path, monkeypatch):
    package = engine_ab.export_base("HEAD", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [m for m in sys.modules if m == "memcap_base" or m.startswith("memcap_base.")]:
        del sys.modules[name]


def test_the_exported_commit_imports_only_itself(base_on_path):
    imports = re.compile(r"^\s*(from|import)\s+memcap\b(?!_base)", re.M)
    offenders = [p.name for p in base_on_path.rglob("*.py") if imports.search(p.read_text())]
    assert not offenders
    import memcap_base.train as base_train

    import memcap.train as head_train
    assert base_train.train_models is not head_train.train_models
    assert base_train.train_models.__module__ == "memcap_base.train.loop"


def test_compare_times_both_sides_alternately(base_on_path, one_thread):
    out = engine_ab.compare("aot", steps=3, rounds=2, mode="never")
    assert [len(out["seconds"][s]) for s in ("base", "head")] == [2, 2]
    assert all(t > 0 for s in out["seconds"].values() for t in s)
    assert out["speed"] == pytest.approx((out["ratios"][0] * out["ratios"][1]) ** 0.5)


def test_the_command_refuses_fewer_than_two_rounds():
    with pytest.raises(SystemExit):
        engine_ab.main(["HEAD", "aot", "--rounds", "1"])

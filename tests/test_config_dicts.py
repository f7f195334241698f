"""Dict-shaped configurations are validated as a whole (memcap/_schema.py and its users).

For every entry point that takes a dict-shaped configuration (a survey's grid point, a spec record, a
TrainConfig record, a job, a profile's parts), one valid example is taken and its malformed variants are
generated from it, at every depth: each key removed in turn (refused when the key is needed, accepted
otherwise), an unknown key added (a made-up one and a near miss of a known one), and each value replaced
by values of the wrong type (a string, None, a list, a float or True for an int, 1 for a bool, ...). Every
refusal must be a ``ValueError`` or ``TypeError`` whose message names the key where it sits
(``job['specs'][0]['heads']``), never an error from deep inside. The valid example must still work.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from memcap import synthesis
from memcap.experiments._jobs import check_job
from memcap.experiments.sweep import capacity_job, train_job
from memcap.real import assumptions as ra
from memcap.train import AoTSpec, MHASpec, TrainConfig, spec_from_dict

MHA = MHASpec(heads=2, context_size=3, examples=5, dim=4, head_dim=2, value_dim=2, classes=3, shared=False,
              embedding=False, seed=1, data_seed=2)
AOT = AoTSpec(heads=2, head_dim=2, dim=4, vocab=5, seq_len=2, mlp_width=3, examples=7, seed=1, data_seed=2,
              shared_compression=True)
CONFIG = TrainConfig(steps=5, epochs=2, batch_size=4, lr=1e-2, schedule="constant", warmup_fraction=0.1,
                     warmup_start_factor=0.5, betas=(0.8, 0.9), eps=1e-7, early_stop=False, eval_every=2,
                     dtype="float64", device="cpu")
SPEC_NULLABLE = frozenset({"head_dim", "classes", "examples"})
CONFIG_NULLABLE = frozenset({"epochs", "batch_size", "device"})
DEVICE_WRONG = {"device": (3, ["cpu"], True)}


@dataclass(frozen=True)
class Entry:
    """One entry point: the argument ``name`` its messages use, a valid ``example``, the ``call`` on a
    configuration, the paths of the ``required`` keys (list indices written ``*``), the keys whose None is
    valid (``nullable``), wrong values per key where the defaults do not fit (``wrong``), what the valid
    example must give (``valid``) and whether leaving an optional key out is cheap enough to run (``cheap``)."""

    name: str
    example: dict
    call: Callable[[Any], Any]
    required: frozenset
    valid: Callable[[Any, dict], bool]
    nullable: frozenset = frozenset()
    wrong: dict = field(default_factory=dict)
    cheap: bool = True


def _survey(point: dict) -> list[dict]:
    return synthesis.feature_rank_survey([point])


GRID_KEYS = {("vocab",), ("seq_len",), ("dim",), ("heads",), ("head_dim",)}
VIT = {"config": {"image_size": 8, "patch": 4, "dim": 8, "heads": 2, "depth": 1},
       "train": {"steps": 1, "batch_size": 8, "lr": 1e-3}, "held_out": 100}
GPT = {"config": {"context": 8, "dim": 8, "heads": 2, "depth": 1},
       "train": {"steps": 1, "batch_size": 2, "lr": 1e-3}, "examples": 4}
TRAINING = {("train",), ("train", "steps"), ("train", "batch_size"), ("train", "lr"), ("config",)}


def _specs(prefix: tuple, kind: str) -> set:
    needed = ("heads", "context_size", "examples") if kind == "mha" else ("heads", "head_dim", "dim")
    return {prefix + ("model",)} | {prefix + (k,) for k in needed}


ENTRIES = {
    "survey-random": Entry("grid[0]", dict(vocab=4, seq_len=2, dim=3, heads=1, head_dim=2, table="random", count=6),
                           _survey, frozenset(GRID_KEYS | {("count",)}),
                           lambda out, ex: len(out) == 1 and out[0]["T"] == 6 and out[0]["table"] == "random"),
    "survey-all": Entry("grid[0]", dict(vocab=3, seq_len=2, dim=2, heads=1, head_dim=1), _survey,
                        frozenset(GRID_KEYS), lambda out, ex: len(out) == 1 and out[0]["T"] == 9),
    "mha-spec": Entry("record", MHA.to_dict(), spec_from_dict, frozenset(_specs((), "mha")),
                      lambda spec, ex: spec.to_dict() == ex, nullable=SPEC_NULLABLE),
    "aot-spec": Entry("record", AOT.to_dict(), spec_from_dict, frozenset(_specs((), "aot")),
                      lambda spec, ex: spec.to_dict() == ex, nullable=SPEC_NULLABLE),
    "train-config": Entry("record", CONFIG.to_dict(), TrainConfig.from_dict, frozenset(),
                          lambda cfg, ex: cfg.to_dict() == ex, nullable=CONFIG_NULLABLE, wrong=DEVICE_WRONG),
    "train-job": Entry("job", train_job([MHA], CONFIG, keep_params=True, seed=3), check_job,
                       frozenset({("kind",), ("specs",), ("config",)} | _specs(("specs", "*"), "mha")),
                       lambda job, ex: job == ex, nullable=SPEC_NULLABLE | CONFIG_NULLABLE, wrong=DEVICE_WRONG),
    "capacity-job": Entry("job", capacity_job([AOT, AOT], [4, 8], CONFIG, rounds=1, points=2, seed=1), check_job,
                          frozenset({("kind",), ("specs",), ("config",), ("candidates",)}
                                    | _specs(("specs", "*"), "aot")),
                          lambda job, ex: job == ex, nullable=SPEC_NULLABLE | CONFIG_NULLABLE, wrong=DEVICE_WRONG),
    "vit-profile": Entry("cfg", VIT, lambda cfg: ra.vit_layers(cfg, device="cpu"),
                         frozenset(TRAINING | {("held_out",)}),
                         lambda out, ex: set(out.contexts) == set(ra.TABLE1_ROWS), cheap=False),
    "gpt-profile": Entry("cfg", GPT, lambda cfg: ra.gpt_layers(cfg, device="cpu"),
                         frozenset(TRAINING | {("examples",)}),
                         lambda out, ex: len(out.contexts) == 4 and out.info["examples"] == 4, cheap=False),
    "bert-profile": Entry("cfg", {"context_size": 16, "examples": 2}, lambda cfg: ra.bert_layers(cfg, device="cpu"),
                          frozenset({("context_size",), ("examples",)}),
                          lambda out, ex: out is None or out.info["examples"] == 2, cheap=False),
    "reports-tests": Entry("tests", dict(ra.QUICK["tests"]), lambda tests: ra.reports(ra.Layers(), tests),
                           frozenset({("subsets",), ("threshold",), ("kruskal_subsets",)}),
                           lambda out, ex: out == {}),
    "figure1-tests": Entry("tests", dict(ra.QUICK["tests"]), lambda tests: ra.figure1(ra.Layers(), tests),
                           frozenset({("fig1_step",), ("fig1_subsets",), ("threshold",)}),
                           lambda out, ex: out == {}),
}


# ---------------------------------------------------------------------------------------------------
# generating the variants


def _wrong_values(value: object, key: object, entry: Entry) -> tuple:
    """Values of a wrong type where ``value`` stands (the kind read off the valid value)."""
    if key in entry.wrong:
        return entry.wrong[key]
    if isinstance(value, bool):
        found = (1, "yes", None)
    elif isinstance(value, int):
        found = (str(value), 2.5, float(value), True, None, [value])
    elif isinstance(value, float):
        found = (str(value), True, None, [value])
    elif isinstance(value, str):
        found = ("no such thing", 3, None, True)
    elif isinstance(value, (list, tuple)):
        found = ("x", 3, {"a": 1}, None)
    elif isinstance(value, dict):
        found = ([], "x", 3, None)
    else:
        raise AssertionError(f"no wrong values for {value!r}")
    return tuple(v for v in found if not (v is None and key in entry.nullable))


def _walk(node: object, path: tuple = ()):
    """Every (path, value) under ``node``, parents first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        yield path + (k,), v
        yield from _walk(v, path + (k,))


def _pattern(path: tuple) -> tuple:
    return tuple("*" if isinstance(p, int) else p for p in path)


def _where(name: str, path: tuple) -> str:
    return name + "".join(f"[{p!r}]" for p in path)


def _variants(entry: Entry):
    """(label, how, path, value): ``how`` is 'missing', 'unknown' or 'wrong'."""
    example = entry.example
    dicts = [((), example)] + [(p, v) for p, v in _walk(example) if isinstance(v, dict)]
    for path, node in dicts:
        first = next(iter(node))
        for key in ("colour", f"{first}s"):
            yield "unknown", path, key
    for path, value in _walk(example):
        if isinstance(path[-1], str) and (_pattern(path) in entry.required or entry.cheap):
            yield "missing", path, None
        for bad in _wrong_values(value, path[-1], entry):
            yield "wrong", path, bad


def _apply(example: dict, how: str, path: tuple, value: object) -> dict:
    out = copy.deepcopy(example)
    if how == "unknown":
        parent = out
        for p in path:
            parent = parent[p]
        parent[value] = 1
        return out
    parent = out
    for p in path[:-1]:
        parent = parent[p]
    if how == "missing":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


CASES = [pytest.param(name, how, path, value, id=f"{name}-{how}-{'.'.join(map(str, path))}-{value!r}"[:120])
         for name, entry in ENTRIES.items() for how, path, value in _variants(entry)]


@pytest.mark.parametrize("entry_name", list(ENTRIES))
def test_the_valid_example_still_works(entry_name):
    entry = ENTRIES[entry_name]
    example = copy.deepcopy(entry.example)
    assert entry.valid(entry.call(example), entry.example)
    assert example == entry.example                      # the configuration is not changed


@pytest.mark.parametrize("entry_name,how,path,value", CASES)
def test_a_malformed_configuration_is_refused_naming_the_key(entry_name, how, path, value):
    entry = ENTRIES[entry_name]
    config = _apply(entry.example, how, path, value)
    if how == "missing" and _pattern(path) not in entry.required:
        entry.call(config)                               # an optional key may be left out
        return
    with pytest.raises((ValueError, TypeError)) as info:
        entry.call(config)
    message = str(info.value)
    if how == "wrong":
        assert _where(entry.name, path) in message, message
    elif how == "missing":
        assert _where(entry.name, path[:-1]) in message and f"[{path[-1]!r}]" in message, message
    else:
        assert _where(entry.name, path) in message and repr(value) in message, message
        if value != "colour":
            assert "did you mean" in message, message


@pytest.mark.parametrize("table", synthesis.TABLES)
def test_a_table_kind_that_draws_sequences_needs_a_count(table):
    """Every table kind without ``count``: 'all' needs none, the others are refused naming ``count`` and
    the kind (the issue: one_last_token ended in "'<' not supported between 'int' and 'NoneType'")."""
    grid = [dict(vocab=3, seq_len=2, dim=2, heads=1, head_dim=1), dict(vocab=3, seq_len=2, dim=2, heads=1,
                                                                       head_dim=1, table=table)]
    if table == "all":
        assert [r["T"] for r in synthesis.feature_rank_survey(grid)] == [9, 9]
        return
    with pytest.raises(ValueError, match=rf"grid\[1\] .* lacks \['count'\]: the table kind '{table}' needs "
                                         r"'count', a count of sequences, a positive int"):
        synthesis.feature_rank_survey(grid)

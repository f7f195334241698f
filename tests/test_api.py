"""The library's front door and its rules: what is public, the top-level API, imports, generator=None.

"Public" is defined by the ``__all__`` of the modules in :data:`tests.api_cases.PUBLIC_MODULES`.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import memcap
from tests.api_cases import NO_BAD_INPUT, PUBLIC_MODULES, cases, generator_calls, public_callables

ROOT = Path(__file__).resolve().parents[1]

TRAIN_NAMES_BEFORE_THE_SPLIT = (
    "MHASpec", "AoTSpec", "Spec", "spec_from_dict", "SCHEDULES", "TrainConfig", "lr_factor", "mha_forward_stacked",
    "aot_forward_stacked", "TrainResult", "group_by_shape", "train_models", "CapacityResult", "capacity_search",
    "trained_attention",
)
"""The public names of the single-file ``memcap/train.py``; the package must keep every one."""


def _defined_names(path: Path) -> set[str]:
    """Names a module's source binds at top level (functions, classes, assignments), not the imported ones."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                names |= {e.id for e in elts if isinstance(e, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@pytest.mark.parametrize("module_name", [m for m in PUBLIC_MODULES if m not in ("memcap", "memcap.train")])
def test_all_lists_every_public_name_of_the_module(module_name):
    """``__all__`` is exactly the module's own non-underscore names: nothing public is left out of it."""
    module = importlib.import_module(module_name)
    public = {n for n in _defined_names(Path(module.__file__)) if not n.startswith("_")}
    assert set(module.__all__) == public


def test_train_package_keeps_every_name_of_the_old_module():
    import memcap.train as train

    assert set(TRAIN_NAMES_BEFORE_THE_SPLIT) <= set(train.__all__)   # kept; later names (Checkpoint) added
    for name in train.__all__:
        obj = getattr(train, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):   # defined in one of the engine's modules
            assert obj.__module__.startswith("memcap.train.") and obj.__module__ != "memcap.train.authors", name


def test_every_public_callable_has_a_bad_input_case_or_a_reason():
    """A new public function fails here until tests/api_cases.py says how to feed it bad input (or why not)."""
    public = set(public_callables())
    with_case = {name for name, case in cases().items() if not case.method}
    assert not with_case & set(NO_BAD_INPUT), "a callable has both a case and a reason"
    assert public - with_case - set(NO_BAD_INPUT) == set(), "public callables without a case"
    assert (with_case | set(NO_BAD_INPUT)) - public == set(), "cases for names that are not public"
    assert all(reason.strip() for reason in NO_BAD_INPUT.values())


def test_every_public_module_forward_has_a_method_case():
    """A public torch module's forward takes tensors: it has a case like a function does; method cases
    belong to public classes and name methods they have."""
    public = public_callables()
    method_cases = [case for case in cases().values() if case.method]
    assert {case.owner for case in method_cases} <= set(public), "method cases of classes that are not public"
    assert all(callable(getattr(case.fn, case.method, None)) for case in method_cases)
    modules = {name for name, obj in public.items() if inspect.isclass(obj) and issubclass(obj, torch.nn.Module)
               and obj.forward is not torch.nn.Module.forward}
    forwards = {case.owner for case in method_cases if case.method == "forward"}
    assert modules - forwards == set(), "public torch modules whose forward has no case"


def test_top_level_api_is_the_modules_functions():
    for name, module in memcap._API.items():
        assert getattr(memcap, name) is getattr(importlib.import_module(module), name)
    assert set(memcap.__all__) == set(memcap._API) <= set(dir(memcap))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memcap.nope   # noqa: B018


def test_import_memcap_is_light():
    """``import memcap`` loads neither torch nor sympy: the API is imported on first use."""
    code = "import sys, memcap; print(sorted({'torch', 'sympy', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def _imports(path: Path, package: str) -> set[str]:
    """memcap modules imported at the top level of ``path`` (imports inside functions are lazy: not edges)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("memcap")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memcap"):
            for alias in node.names:   # ``from memcap import bounds`` imports the module memcap.bounds
                sub = f"{node.module}.{alias.name}"
                found.add(sub if (ROOT / (sub.replace(".", "/") + ".py")).exists()
                          or (ROOT / sub.replace(".", "/")).is_dir() else node.module)
    return found - {"memcap", package}


def test_no_import_cycles():
    modules = {}
    for path in (ROOT / "memcap").rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        package = name if rel.name == "__init__" else name.rpartition(".")[0]
        modules[name] = _imports(path, package)
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2:
            return
        assert state.get(name) != 1, "import cycle: " + " -> ".join(trail + [name])
        state[name] = 1
        for dep in sorted(modules.get(name, ())):
            visit(dep, trail + [name])
        state[name] = 2

    for name in sorted(modules):
        visit(name, [])


def _tensors(value: object) -> list:
    """Every tensor and array inside a result (dataclasses, tuples, lists, dicts), in a fixed order."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return [value]
    if isinstance(value, torch.nn.Module):
        return list(value.state_dict().values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in _tensors(getattr(value, f.name))]
    if isinstance(value, dict):
        return [t for k in sorted(value, key=str) for t in _tensors(value[k])]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _equal(a: object, b: object) -> bool:
    """Two results hold the same tensors, bit for bit (or, without tensors, compare equal)."""
    pairs = list(zip(_tensors(a), _tensors(b), strict=True))
    if not pairs:   # a verdict or a report (bool, None, dict of numbers, a dataclass of numbers)
        return a == b
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in pairs)


GENERATOR_FUNCTIONS = sorted(name for name, fn in public_callables().items()
                             if "generator" in inspect.signature(fn).parameters)


def _generator_call(name: str, generator: torch.Generator | None) -> object:
    """A valid CPU call of ``name`` (its :class:`Case`, else its entry of ``generator_calls``), with
    ``generator`` passed, or left to its default when None. The arguments are built afresh for each call:
    a call may change them (a model it trains or re-initialises)."""
    case = cases().get(name)
    if case is not None and case.missing is not None:
        pytest.skip(case.missing)
    build = case.build if case is not None else generator_calls()[name]
    kwargs = build(torch.device("cpu"))
    fn = public_callables()[name]
    return fn(**kwargs) if generator is None else fn(**kwargs, generator=generator)


def test_every_generator_function_has_a_call():
    """A public callable taking ``generator`` has a Case or a call in ``generator_calls``, not both."""
    calls = set(generator_calls())
    assert calls <= set(NO_BAD_INPUT), "generator calls for names that have a Case (or are not public)"
    assert set(GENERATOR_FUNCTIONS) - set(cases()) == calls


@pytest.mark.parametrize("name", GENERATOR_FUNCTIONS)
def test_generator_none_means_a_fresh_generator_seeded_with_0(name, one_thread):
    fn = public_callables()[name]
    assert inspect.signature(fn).parameters["generator"].default is None
    default = _generator_call(name, None)
    assert _equal(default, _generator_call(name, torch.Generator().manual_seed(0)))


SAME_FOR_EVERY_SEED = {
    "memcap.data.next_token_distribution": "its case passes the lookup table, the only thing the generator draws",
    "memcap.synthesis.mahdavi_association_aot": "one head: Claim 1 alone, no random draw (the generator draws the "
                                                "separators of the later heads)",
    "memcap.synthesis.mahdavi_classifier": "one head: Claim 1 alone, as mahdavi_association_aot",
    **{f"memcap.linalg.{name}": "a verdict on a generic random draw (a rank, a Kruskal rank): the same for "
                                "almost every seed"
       for name in ("assumption_report", "check_assumption_1", "check_assumption_3", "kruskal_curve",
                    "kruskal_search", "randomized_kruskal_rank", "satisfies_assumption_1",
                    "satisfies_assumption_3", "subset_test")},
}
"""Calls whose result does not depend on the seed, with the reason."""


def test_the_seed_exceptions_name_generator_functions():
    assert set(SAME_FOR_EVERY_SEED) <= set(GENERATOR_FUNCTIONS)


@pytest.mark.parametrize("name", GENERATOR_FUNCTIONS)
def test_the_generator_is_the_source_of_the_random_draws(name, one_thread):
    """Seeds 0 and 1 give different results, so the generator passed in is the one that draws (not a
    global or a fresh one); the exceptions, listed with their reason, give the same result for both."""
    different = not _equal(_generator_call(name, torch.Generator().manual_seed(0)),
                           _generator_call(name, torch.Generator().manual_seed(1)))
    assert different != (name in SAME_FOR_EVERY_SEED), SAME_FOR_EVERY_SEED.get(name, "the seed changed nothing")

"""The exercise checkers (``memcap.textbook.exercises``): every checker passes its chapter's reference solution and
rejects typical wrong answers with a message that says what is wrong.

The reference answer is taken from the solution block itself: the statement ``assert check("ex-...",
ARGS)`` in the solution names the answer, and :func:`reference_answer` executes the part of the chapter
that computes ARGS (the statements that define those names, and what they need, found by reading the
code), so a change to a solution is tested here as it is written in the book. The strict build runs
the same assertions inside the chapters.
"""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import math
import re
from typing import Any

import jupytext
import numpy as np
import pytest
import torch

from memcap.textbook.edition import exercise_index
from memcap.textbook.exercises import Result, chapter_labels, check, grade, registry, run_check
from tests.conftest import ROOT

CHECKED = registry()
KINDS_WITH_CHECKERS = {"coding", "computation"}


def _exercise_block(text: str, label: str, kind: str) -> str:
    if kind == "exercise":
        pattern = rf"```\{{exercise-start\}}[^\n]*\n:label: {re.escape(label)}\n(.*?)```\{{exercise-end\}}"
    else:
        pattern = rf"```\{{solution-start\}} {re.escape(label)}\n(.*?)```\{{solution-end\}}"
    found = re.search(pattern, text, re.DOTALL)
    assert found, f"no {kind} block for {label}"
    return found.group(1)


# --- reading the reference answer out of the chapter --------------------------------------------------

def _stored(node: ast.AST) -> set[str]:
    """Names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _loaded(node: ast.AST) -> set[str]:
    """Names a statement reads from outside itself (approximately: loads minus anything it binds inside)."""
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    local |= {a.arg for n in ast.walk(node) if isinstance(n, ast.arguments)
              for a in [*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg] if a is not None}
    return loads - local - set(dir(builtins))


def reference_answer(label: str) -> tuple[tuple, dict]:
    """Run the statements of the chapter that compute the answer its solution passes to ``check``."""
    doc = CHECKED[label].chapter
    notebook = jupytext.read(ROOT / f"{doc}.md")
    solution = _exercise_block((ROOT / f"{doc}.md").read_text(encoding="utf-8"), label, "solution")
    statements: list[tuple[ast.stmt, bool]] = []     # (statement, inside the solution block)
    call = None
    for cell in notebook.cells:
        if cell.cell_type != "code" or "skip-execution" in cell.metadata.get("tags", []):
            continue
        in_solution = cell.source.strip() in solution
        source = "\n".join(line for line in cell.source.splitlines()     # IPython magics are not Python
                           if not line.lstrip().startswith(("%", "!")))
        for node in ast.parse(source).body:
            test = node.test if isinstance(node, ast.Assert) else None
            if isinstance(test, ast.Call) and getattr(test.func, "id", "") == "check" and \
                    isinstance(test.args[0], ast.Constant) and test.args[0].value == label:
                call = test
                break
            statements.append((node, in_solution))
        if call is not None:
            break
    assert call is not None, f"{doc}: the solution of {label} has no `assert check({label!r}, ...)`"
    needed = set().union(*(_loaded(arg) for arg in [*call.args[1:], *(k.value for k in call.keywords)]))
    kept = []
    for node, in_solution in reversed(statements):
        binds = _stored(node) & needed
        uses = in_solution and _loaded(node) & needed
        if binds or uses:
            kept.append(node)
            needed = (needed - binds) | _loaded(node)
    namespace: dict = {}
    exec(compile(ast.Module(body=kept[::-1], type_ignores=[]), f"<{label} reference>", "exec"), namespace)
    args = tuple(eval(compile(ast.Expression(a), "<arg>", "eval"), namespace) for a in call.args[1:])
    named = {k.arg: eval(compile(ast.Expression(k.value), "<arg>", "eval"), namespace) for k in call.keywords}
    return args, named


# --- the registry and the chapters agree --------------------------------------------------------------

def test_every_checker_belongs_to_an_exercise_of_its_chapter():
    rows = {r["label"]: r for r in exercise_index(ROOT)}
    assert len(CHECKED) >= 8
    for label, entry in CHECKED.items():
        assert label in rows, f"{label} has a checker but no exercise"
        assert rows[label]["doc"] == entry.chapter, f"{label}: checker in {entry.chapter}, exercise elsewhere"
        assert rows[label]["kind"] in KINDS_WITH_CHECKERS, f"{label} is a {rows[label]['kind']} exercise"
        assert len(entry.summary) > 40, f"{label}: the checker's docstring should say what it tests"


def test_every_coding_and_computation_exercise_of_a_checked_chapter_has_a_checker():
    """Once a chapter has checkers, all its coding and computation exercises have one."""
    chapters = {entry.chapter for entry in CHECKED.values()}
    missing = [r["label"] for r in exercise_index(ROOT)
               if r["doc"] in chapters and r["kind"] in KINDS_WITH_CHECKERS and r["label"] not in CHECKED]
    assert not missing, f"coding/computation exercises without a checker: {missing}"


def test_checked_exercises_show_the_call_and_the_solutions_assert_it():
    for label, entry in CHECKED.items():
        text = (ROOT / f"{entry.chapter}.md").read_text(encoding="utf-8")
        exercise = _exercise_block(text, label, "exercise")
        call = re.search(r'```\{code-cell\} ipython3\n:tags: \[skip-execution\]\n\n(.*?)```', exercise, re.DOTALL)
        assert call, f"{label}: the exercise needs a code cell tagged skip-execution with the check call"
        assert f'check("{label}"' in call.group(1), f"{label}: the exercise's code cell does not call check"
        assert f'assert check("{label}"' in _exercise_block(text, label, "solution"), \
            f"{label}: the solution must `assert check(...)` so that the strict build tests the checker"


def test_exercise_tags_give_difficulty_and_time_in_checked_chapters():
    chapters = {entry.chapter for entry in CHECKED.values()}
    rows = [r for r in exercise_index(ROOT) if r["doc"] in chapters]
    assert len(rows) >= 12
    for r in rows:
        assert r["difficulty"] in ("easy", "medium", "hard") and 5 <= r["minutes"] <= 120, r


def test_chapter_labels():
    assert chapter_labels("book/mahdavi/skip") == ["ex-mahdavi-skip-2", "ex-mahdavi-skip-3"]
    assert chapter_labels("book/nowhere") == []


# --- the reference solutions pass ----------------------------------------------------------------------

SLOW_REFERENCES = {"ex-mahdavi-relu-3",     # an exact certificate and a ReLU training run: seconds
                   "ex-mahdavi-real-models-3",   # a ViT embedding of all digits and 2000 subsets
                   "ex-mahdavi-experiments-3",   # trains three models: about a minute
                   "ex-mahdavi-experiments-4"}   # trains two models: about ten seconds


@pytest.mark.parametrize("label", [pytest.param(label, marks=pytest.mark.slow) if label in SLOW_REFERENCES
                                   else label for label in sorted(CHECKED)])
def test_checker_passes_the_reference_solution(label, one_thread):
    args, named = reference_answer(label)
    result = run_check(label, *args, **named)
    assert result.passed, f"the reference solution of {label} fails its checker:\n{result.message}"
    assert re.fullmatch(r"\d+ cases?", result.message), result.message


# --- right answers in other natural types are right --------------------------------------------------

def _converted(value: Any, form: str) -> Any:
    """``value`` as a student might give it: ``numpy`` (tensors as arrays, numbers and verdicts as NumPy
    scalars), ``lists`` (tensors as nested lists) or ``column`` (vectors as columns); containers keep their
    type, a function answer returns its results converted, other objects (records, SymPy) are kept."""
    if isinstance(value, torch.Tensor):
        if form == "numpy":
            return value.detach().cpu().numpy()
        if form == "lists":
            return value.tolist()
        return value[:, None] if value.dim() == 1 else value
    if form == "numpy" and isinstance(value, (bool, int, float)):
        return {bool: np.bool_, int: np.int64, float: np.float64}[type(value)](value)
    if isinstance(value, dict):
        return {k: _converted(v, form) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_converted(v, form) for v in value)
    if inspect.isfunction(value):
        @functools.wraps(value)
        def converted(*args, **kwargs):
            return _converted(value(*args, **kwargs), form)
        return converted
    return value


def _changes(value: Any, form: str) -> bool:
    """Whether :func:`_converted` changes anything in ``value`` (a function: assumed to)."""
    if inspect.isfunction(value):
        return True
    if isinstance(value, dict):
        return any(_changes(v, form) for v in value.values())
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return any(_changes(v, form) for v in value)
    if isinstance(value, torch.Tensor):
        return form != "column" or value.dim() == 1
    return form == "numpy" and isinstance(value, (bool, int, float))


FORMS = ("numpy", "lists", "column")


@pytest.mark.parametrize("label, form", [
    # a slow reference (a training run) is computed once, for the form its answer (counts, records) can take
    pytest.param(label, "numpy", marks=pytest.mark.slow) if label in SLOW_REFERENCES else (label, form)
    for label in sorted(CHECKED) for form in (FORMS[:1] if label in SLOW_REFERENCES else FORMS)])
def test_checker_passes_the_reference_solution_in_other_natural_types(label, form, one_thread):
    """NumPy arrays and scalars, nested lists, columns: a right answer stays right in the types a student
    may naturally use, and the verdict says so (never "could not be checked")."""
    args, named = reference_answer(label)
    if not _changes((args, named), form):
        pytest.skip(f"{label}'s reference answer has nothing to convert to {form}")
    result = run_check(label, *_converted(args, form), **_converted(named, form))
    assert result.passed, f"the reference solution of {label}, converted to {form}, fails:\n{result.message}"


# --- right answers rounded, or computed in another precision, as the statement allows, are right -------

def _digits(value: Any, digits: int) -> Any:
    """``value`` (a number, or a dict or list of numbers) rounded to ``digits`` significant digits."""
    if isinstance(value, dict):
        return {k: _digits(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_digits(v, digits) for v in value)
    return float(f"{float(value):.{digits}g}")


def _returning(label: str, change) -> tuple:
    """The reference answer of ``label`` (a function) with ``change`` applied to what it returns."""
    (function,), _ = reference_answer(label)
    return (lambda *args: change(function(*args)),)


def _relu_floors(floor) -> tuple:
    """ex-mahdavi-relu-2's right answer with Proposition 3's bounds rounded down by ``floor``."""
    from memcap import bounds

    return ({o: floor(bounds.relu_capacity(32, 40, o)) for o in (1, 64)},
            {o: bounds.relu_param_count(32, 64, 40, o) for o in (1, 64)},
            bounds.mha_capacity(40, 32, 32), bounds.mha_param_count(40, 64, 32, 1, 1))


ROUNDED = [
    ("three significant digits", "ex-dana-aot-2", lambda: (lambda a: (a[0], _digits(a[1], 3)))(reference_answer(
        "ex-dana-aot-2")[0])),
    ("three significant digits", "ex-dana-rw-3", lambda: (lambda a: (a[0], _digits(a[1], 3)))(reference_answer(
        "ex-dana-rw-3")[0])),
    ("three significant digits", "ex-mahdavi-theorem1-2",
     lambda: (lambda a: (_digits(a[0], 3), a[1]))(reference_answer("ex-mahdavi-theorem1-2")[0])),
    ("widths as whole floats", "ex-dana-lk-3",
     lambda: (lambda a: ([float(w) for w in (a[0].values() if isinstance(a[0], dict) else a[0])], a[1]))(
         reference_answer("ex-dana-lk-3")[0])),
    ("a width as a whole float", "ex-dana-rw-2", lambda: (float(reference_answer("ex-dana-rw-2")[0][0]),)),
    ("five decimal places", "ex-mahdavi-assumptions-2",
     lambda: (lambda a: ({k: round(float(v), 5) for k, v in a[0].items()}, a[1], a[2]))(
         reference_answer("ex-mahdavi-assumptions-2")[0])),
    ("scales rounded up", "ex-mahdavi-saturation-2",
     lambda: tuple(math.ceil(v) for v in reference_answer("ex-mahdavi-saturation-2")[0])),
    ("parameters rounded up", "ex-syn-take-2",
     lambda: _returning("ex-syn-take-2", lambda pair: tuple(None if v is None else math.ceil(v) for v in pair))),
    ("a float32 accuracy", "ex-dana-t1-3",
     lambda: _returning("ex-dana-t1-3", lambda v: torch.tensor(float(v), dtype=torch.float32))),
    ("a float32 perturbation", "ex-mahdavi-toolkit-3",
     lambda: _returning("ex-mahdavi-toolkit-3", lambda delta: torch.as_tensor(delta).float())),
    ("floors as tensors", "ex-mahdavi-relu-2", lambda: _relu_floors(lambda b: torch.floor(torch.tensor(b)))),
    ("floors from SymPy", "ex-mahdavi-relu-2",
     lambda: _relu_floors(lambda b: __import__("sympy").floor(__import__("sympy").nsimplify(b)))),
    ("verdicts as 0-d bool tensors", "ex-syn-side-3", lambda: (_certify_as("tensor"),)),
]


@pytest.mark.parametrize("how, label, answer", ROUNDED, ids=[f"{label}-{how}" for how, label, _ in ROUNDED])
def test_right_answers_rounded_or_in_float32_as_the_statement_allows_are_right(how, label, answer, one_thread):
    result = run_check(label, *answer())
    assert result.passed, f"{label}, {how}: {result.message}"


# --- typical wrong answers are rejected with the right message -----------------------------------------

def _ratios(scale=1.0, without_readout=False):
    """``without_readout``: the parameter count without W_D's d d_out = 64 weights."""
    from memcap import bounds

    return {dh: scale * bounds.mha_capacity(40, 32, dh)
            / (bounds.mha_param_count(40, 64, dh, 1, 1) - 64 * without_readout) for dh in (8, 16, 32, 64)}


def _memorize_classes(one_hot: bool, skip: bool = True, switch: bool = False):
    """``switch``: memorized without the skip, then the skip switched on (labels not shifted by W_D^T e)."""
    import dataclasses

    from memcap.construct import mahdavi

    def fit(contexts, queries, labels, classes, heads, head_dim):
        y = torch.nn.functional.one_hot(labels, classes).double() if one_hot else labels.double()
        params = mahdavi.memorize(contexts, queries, y, heads=heads, head_dim=head_dim, skip=skip,
                                  generator=torch.Generator().manual_seed(0))
        return dataclasses.replace(params, skip=True) if switch else params
    return fit


def _second_layer(first: bool):
    from memcap.construct import mahdavi_limits as ml
    from memcap.construct.mahdavi import memorize

    def fit(contexts, queries, labels, first_layer, heads, head_dim):
        if first:
            contexts, queries = ml.apply_self_attention(first_layer, contexts, queries)
        return memorize(contexts, queries, labels, heads=heads, head_dim=head_dim)
    return fit


def _relu_answers(keep: int):
    import random

    from memcap.construct import mahdavi_limits as ml
    from memcap.construct import relu_exact as rx

    x = rx.integer_points_in_general_position(10, 2, seed=0)       # the chapter's data set
    rng = random.Random(1)
    y = [rng.randint(-3, 3) for _ in range(10)]
    contexts = torch.eye(2, 3, dtype=torch.float64, device="cpu")
    queries = torch.cat([torch.zeros(10, 1, dtype=torch.float64, device="cpu"),
                         torch.tensor(x, dtype=torch.float64, device="cpu")], dim=1)
    X = ml.fcn_inputs(contexts, queries)
    labels = torch.tensor(y, dtype=torch.float64, device="cpu")[:, None]
    fit = ml.fit_relu(X[:keep], labels[:keep], 2, restarts=1, steps=50, generator=torch.Generator().manual_seed(4))
    return rx.exact_relu_residual_bound(x[:keep], y[:keep], 2), fit


def _positive_certificate(patterns=74, tuples=2775):
    """A positive certificate: its value on the first nine points of the chapter's data set (74
    patterns, 2775 pairs of them); with ``patterns=44`` a certificate no 7 points can give."""
    from fractions import Fraction

    from memcap.construct.relu_exact import ExactReLUBound

    return ExactReLUBound(squared=Fraction(17928072, 144092762311), patterns=patterns, tuples=tuples)


def _relu_counts(out_scale=True):
    from memcap import bounds

    examples = {o: math.floor(bounds.relu_capacity(32, 40, o if out_scale else 1)) for o in (1, 64)}
    params = {o: bounds.relu_param_count(32, 64, 40, o) for o in (1, 64)}
    return examples, params, bounds.mha_capacity(40, 32, 32), bounds.mha_param_count(40, 64, 32, 1, 1)


def _aot_permuter(names=("W_Q", "W_K", "W_V", "W_O")):
    """A head permutation that permutes only the matrices ``names``."""
    from dataclasses import replace

    return lambda params, perm: replace(params, **{n: getattr(params, n)[perm] for n in names})


def _aot_gpt2(total_fix=0, percent=False):
    N, S, d, H, dh = 50257, 1024, 768, 12, 64
    total = d * (S + 2 * N + 4 * dh * H) - total_fix
    fraction = 4 * dh * H * d / (d * (S + 2 * N + 4 * dh * H))
    return total, 100 * fraction if percent else fraction


def _best_divergence(width=None):
    from memcap.construct import dana

    return lambda probs, d: dana.best_sequence_encoder(probs, width or d, steps=400)[1].kl


def _ar_closed_form(swap=False, slope_factor=1):
    import sympy as sp

    w, a1, a2, y1, y2 = sp.symbols("w a1 a2 y1 y2", real=True)
    first, second = (y2, y1) if swap else (y1, y2)
    A = second + (first - second) / (1 + sp.exp(-w * a2 * (a1 - a2)))
    return A, slope_factor * a2 * (a1 - a2) * (y1 - y2) / 4


def _t1_accuracy(on="unseen"):
    from memcap.data import all_sequences
    from memcap.models import aot_forward

    def accuracy(params, seqs, table):
        everything = all_sequences(table.shape[0], table.dim())
        kept = (everything[:, None, :] == seqs[None]).all(-1).any(1)
        chosen = {"unseen": ~kept, "all": torch.ones_like(kept), "kept": kept}[on]
        right = aot_forward(params, everything[chosen]).argmax(1) == table[tuple(everything[chosen].T)]
        return int(right.sum()) if on == "unseen" else float(right.double().mean())
    return accuracy


def _lk_widths(shift=0):
    need = {c0: math.floor(32 * math.log(50258) / c0 ** 2) + 1 + shift for c0 in (0.5, 0.1)}
    return need, [math.sqrt(32 * math.log(50258) / 768), math.sqrt(8 * math.log(2 * 50257 ** 2) / 768)]


def _lk_minimiser(clip=True):
    def minimiser(N, C, r_bar):
        kappa = (1 + 2 * C) / (1 - 2 * C) * r_bar
        if kappa >= 1:
            return 0.0
        value = math.log((N - 1) * (1 - kappa) / kappa) / (1 - 2 * C)
        return max(0.0, value) if clip else value
    return minimiser


def _rw_answers(drop=0, extra=(), chance=True, proved=False):
    """``proved``: Corollary 2 with the proved count K = H + d instead of the paper's H d_h + d."""
    from memcap import bounds

    names = [n for n, e in bounds.BOUNDS.items() if e.citation.startswith(bounds.DANA)]
    names = names[drop:] + list(extra)
    accuracies = {h: bounds.cor2_accuracy(h, 10, 10, 50, 2500) - (0 if chance else 1 / 50) for h in (1, 11, 21, 31)}
    if proved:
        accuracies = {h: 1 / 50 + (1 - 1 / 50) * (h + 10) / 2500 for h in (1, 11, 21, 31)}
    return names, accuracies


def _mexp_guaranteed(chance=True, count_shift=0):
    from memcap import bounds

    K = bounds.mha_capacity(60, 32, 64) + count_shift
    return {T: K / T + (1 - K / T) / 100 * chance for T in (10_000, 40_000)}


def _mexp_specs(**changes):
    from memcap.train import MHASpec

    fields = dict(context_size=8, examples=150, dim=16, **changes)
    return [MHASpec(heads=H, **fields) for H in (1, 2, 4)]


def _edge_top():
    """Largest weights (T, 4) at T = 140 and 180 whose examples have 0 to 4 saturated heads (0.995 saturated,
    0.6 not), the counts cycling so that '> 2', '>= 2' and the share of pairs all differ."""
    top = {}
    for T in (140, 180):
        counts = np.arange(T) % 5 if T == 140 else np.minimum(np.arange(T) % 7, 4)
        top[T] = np.where(np.arange(4)[None, :] < counts[:, None], 0.995, 0.6)
    return top


def _edge_shares(top, rule="right"):
    out = {}
    for T, w in top.items():
        sat = w > 0.99
        majority = {"right": (sat.sum(1) > 2).mean(), "half": (sat.sum(1) >= 2).mean(),
                    "pairs": sat.mean()}.get(rule, (sat.sum(1) > 2).mean())
        unsat = (~sat).any(1).mean()
        out[T] = {"all": (majority, 1 - unsat), "percent": (100 * majority, 100 * unsat)}.get(rule,
                                                                                              (majority, unsat))
    return out


def _dana_per_head(chance=True, per_dh=True):
    from memcap import bounds
    from memcap.fits import linear_fit

    def count_per_head(heads, accuracies, vocab, examples, head_dim):
        counts = [bounds.cor2_capacity_from_accuracy(a, vocab, examples) if chance else a * examples
                  for a in accuracies]
        return linear_fit(heads, counts).slope / (head_dim if per_dh else 1)
    return count_per_head


def _side_costs(invert_dana=False, value_dim=1):
    from memcap import bounds

    mahdavi = {H: bounds.mha_param_count(H, 64, 64, value_dim, 1) / bounds.mha_capacity(H, 32, 64)
               for H in (1, 8, 31)}
    dana = {H: bounds.aot_param_count(50, 2, 10, H, 10) / bounds.aot_capacity(H, 10, 10) for H in (1, 8, 31)}
    return mahdavi, ({H: 1 / v for H, v in dana.items()} if invert_dana else dana)


def _open3_measure(how="right"):
    """measure(task, weights) for ex-syn-open-3, or a typical mistake: ``formula`` ((H-1)(T-n+1)/(HT) without
    measuring), ``unsaturated`` (the share of unsaturated pairs), ``unscaled`` (keys not scaled by 1/sqrt(d))."""
    from memcap.data import sinusoidal_positions
    from memcap.experiments.mahdavi_fig3 import saturation
    from memcap.models import mha_attention

    def measure(task, weights):
        H, T = weights["W_K"].shape[0], task.queries.shape[0]
        n, d = task.contexts.shape[-2:]
        if how == "formula":
            return (H - 1) * (T - n + 1) / (H * T)
        pos = sinusoidal_positions(n + 1, d, dtype=torch.float64, device=task.contexts.device)
        W_K = weights["W_K"] if how == "unscaled" else weights["W_K"] / d ** 0.5
        theta = mha_attention(W_K, weights["W_Q"], task.contexts + pos[1:], task.queries + pos[0])
        share = saturation(theta.cpu().numpy())["fraction_saturated"]
        return 1 - share if how == "unsaturated" else share
    return measure


def _more_heads(factor=2):
    """A second layer for ex-mahdavi-skip-3 with ``factor`` times the heads it is given."""
    from memcap.construct import mahdavi_limits as ml
    from memcap.construct.mahdavi import memorize

    def fit(contexts, queries, labels, first_layer, heads, head_dim):
        contexts, queries = ml.apply_self_attention(first_layer, contexts, queries)
        return memorize(contexts, queries, labels, heads=factor * heads, head_dim=head_dim,
                        generator=torch.Generator().manual_seed(7))
    return fit


def _certify_as(kind):
    """A right certify for ex-syn-side-3 whose True and False are ``kind``: ``int`` (1 and 0) or ``tensor`` (0-d
    bool tensors, as torch comparisons give them)."""
    def certify(mse, examples, tol):
        verdict = True if (examples * mse) ** 0.5 <= tol else False if mse ** 0.5 > tol else None
        if verdict is None:
            return None
        return int(verdict) if kind == "int" else torch.tensor(verdict, device="cpu")
    return certify


def _take_needed(inverse=False, zero=False):
    def parameters_needed(row, examples):
        g = row.per_guaranteed
        if inverse:
            return examples / row.per_example, None if g is None else examples / g
        return examples * row.per_example, (0 if zero else None) if g is None else examples * g
    return parameters_needed


WRONG = [
    ("ex-mahdavi-theorem1-2", lambda: (_ratios(), 64), "case 5 (the most parameter-efficient d_h)"),
    ("ex-mahdavi-theorem1-2", lambda: ({k: 1 / v for k, v in _ratios().items()}, 32), "times too large"),
    ("ex-mahdavi-theorem1-2", lambda: ([0.1, 0.2], 32), "should have 4 entries"),
    ("ex-mahdavi-theorem1-3", lambda: (_memorize_classes(one_hot=False),), "one-hot"),
    ("ex-mahdavi-theorem1-3", lambda: (_memorize_classes(one_hot=True, skip=False),), "skip connection"),
    ("ex-mahdavi-theorem1-3", lambda: (_memorize_classes(one_hot=True, skip=False, switch=True),), "wrong class"),
    ("ex-mahdavi-theorem1-2", lambda: (_digits(_ratios(without_readout=True), 3), 32), "slightly too large"),
    ("ex-mahdavi-theorem1-3", lambda: (lambda *a: None,), "should return the layer's weights"),
    ("ex-mahdavi-tightness-2", lambda: ({h: 32 * h for h in (1, 5, 10, 20, 40)},), "sum to one"),
    ("ex-mahdavi-tightness-2", lambda: ({h: 63 * h + 1 for h in (1, 5, 10, 20, 40)},), "Proposition 5"),
    ("ex-mahdavi-tightness-3", lambda: (lambda c: c + 1 / c.shape[-1],), "sum to 0"),
    ("ex-mahdavi-tightness-3", lambda: (lambda c: 0 * c,), "same vector b"),
    ("ex-mahdavi-tightness-3", lambda: (lambda c: c[:, :, :-1],), "same shape"),
    ("ex-mahdavi-relu-2", lambda: _relu_counts(out_scale=False), "d_out = 64"),
    ("ex-mahdavi-relu-2", lambda: ({1: 1}, {}, 1, 1), "one entry for each of [1, 64]"),
    ("ex-mahdavi-relu-3", lambda: (_positive_certificate(), _relu_answers(keep=7)[1]), "on the first 7 points"),
    ("ex-mahdavi-relu-3", lambda: (_positive_certificate(44, 990), _relu_answers(keep=7)[1]), "exactly zero"),
    ("ex-mahdavi-relu-3", lambda: (_relu_answers(keep=6)[0], _relu_answers(keep=7)[1]), "on the first 7 points"),
    ("ex-mahdavi-relu-3", lambda: (_relu_answers(keep=7)[0], _relu_answers(keep=10)[1]),
     "trained on the first 7 examples"),
    ("ex-mahdavi-relu-3", lambda: (_relu_answers(keep=7)[0], None), "what fit_relu returns"),
    ("ex-mahdavi-skip-2", lambda: ((1.5, -1.5),), "adds the skip term"),
    ("ex-mahdavi-skip-2", lambda: ((-0.5, 2.5, 5.0),), "d_out = 2 entries"),
    ("ex-mahdavi-skip-2", lambda: (torch.tensor([2.5, -4.5], device="cpu"),), "first d_out coordinates"),
    ("ex-mahdavi-skip-3", lambda: (_second_layer(first=False),), "Assumption 1"),
    ("ex-mahdavi-skip-3", lambda: (lambda *a: a[3],), "one number per example"),
    ("ex-mahdavi-skip-3", lambda: (_more_heads(),), "given number of heads and head dimension"),
    ("ex-dana-aot-2", lambda: _aot_gpt2(total_fix=1024 * 768), "positional embedding"),
    ("ex-dana-aot-2", lambda: _aot_gpt2(percent=True), "not a percentage"),
    ("ex-dana-aot-3", lambda: (lambda params, perm: params,), "not moved at all"),
    ("ex-dana-aot-3", lambda: (_aot_permuter(("W_Q", "W_K")),), "logits should not change"),
    ("ex-dana-aot-3", lambda: (lambda params, perm: None,), "should return the permuted AoT"),
    ("ex-dana-se-2", lambda: (39.7962 / 2,), "not the squared distance"),
    ("ex-dana-se-2", lambda: (45.0,), "times too large"),
    ("ex-dana-se-3", lambda: (_best_divergence(width=1),), "Proposition 2"),
    ("ex-dana-se-3", lambda: (lambda probs, d: 0.0,), "only two tokens"),
    ("ex-dana-ar-2", lambda: _ar_closed_form(swap=True), "swapped"),
    ("ex-dana-ar-2", lambda: _ar_closed_form(slope_factor=4), "derivative at 0 is 1/4"),
    ("ex-dana-ar-2", lambda: (__import__("sympy").Symbol("t"), 0), "symbols w, a1, a2, y1, y2"),
    ("ex-dana-ar-3", lambda: ({H: min(16, 2 * H + 3) for H in range(1, 9)},), "paper's min(16, H d_h + d)"),
    ("ex-dana-ar-3", lambda: ([1, 2, 3],), "should have 8 entries"),
    ("ex-dana-t1-2", lambda: ({d: d * (208 + 40_000) for d in (2, 64)},) * 2, "not T0"),
    ("ex-dana-t1-2", lambda: ({d: d * (108 + 4 * (10_000 - d)) for d in (2, 64)},) * 2, "two N x d matrices"),
    ("ex-dana-t1-3", lambda: (_t1_accuracy("all"),), "leave out the rows of seqs"),
    ("ex-dana-t1-3", lambda: (_t1_accuracy("kept"),), "measure it on the others"),
    ("ex-dana-t1-3", lambda: (_t1_accuracy("unseen"),), "not their number"),
    ("ex-dana-lk-3", lambda: _lk_widths(shift=-1), "the inequality is strict"),
    ("ex-dana-lk-3", lambda: _lk_widths(shift=5), "a smaller width already has"),
    ("ex-dana-lk-3", lambda: (_lk_widths()[0], [0.1, 0.2]), "case 3 (the paper's C at d = 768)"),
    ("ex-dana-lk-4", lambda: (_lk_minimiser(clip=False),), "Lambda ranges over the numbers >= 0"),
    ("ex-dana-lk-4", lambda: (lambda N, C, r_bar: 1.0,), "above its minimum"),
    ("ex-dana-rw-2", lambda: (10 ** 5 - 1,), "different width has a smaller count"),
    ("ex-dana-rw-2", lambda: (2.5,), "whole number"),
    ("ex-dana-rw-3", lambda: _rw_answers(drop=2), "2 closed forms from Dana et al. are missing"),
    ("ex-dana-rw-3", lambda: _rw_answers(extra=["mha_capacity"]), "do not come from Dana et al."),
    ("ex-dana-rw-3", lambda: _rw_answers(chance=False), "chance term 1/N is missing"),
    ("ex-dana-rw-3", lambda: _rw_answers(proved=True), "the proved count K = H + d"),
]


# --- wrong answers: the setting, Part I's assumptions, toolkit, constructions and real models ------

def _shared_and_repeated(softmax_axis=-1, swap=False):
    from memcap import models

    def answer(layer, context, queries):
        T, (n, d) = queries.shape[0], context.shape
        shared = models.mha_forward(layer, context, queries)
        repeated = models.mha_forward(layer, context.expand(T, n, d), queries)
        W_K, W_Q = (layer.W_Q, layer.W_K) if swap else (layer.W_K, layer.W_Q)
        theta = torch.softmax(models.mha_scores(W_K, W_Q, context, queries), dim=softmax_axis)
        return shared, repeated, theta
    return answer


def _planted(dependent=False):
    return {k: (math.comb(16, k - 4) / math.comb(20, k)) if dependent
            else 1 - math.comb(16, k - 4) / math.comb(20, k) for k in range(4, 9)}


def _moment(start=0, axis=1):
    return lambda s, dim: torch.stack([s ** j for j in range(start, start + dim)], dim=axis)


def _eigen(lam_scale=1):
    import sympy as sp

    lam = sp.Symbol("lambda")
    return lam, {1 + lam / lam_scale: 1, sp.Integer(1): 4}


def _perturbation(which):
    def answer(A):
        U, S, Vh = torch.linalg.svd(A, full_matrices=False)
        k = 0 if which == "largest" else int(torch.linalg.matrix_rank(A)) - 1
        return -S[k] * torch.outer(U[:, k], Vh[k])
    return answer


def _scales(log=math.log, tokens=31):
    return tuple((5 + log(2 * tokens / delta)) / g for g, delta in ((1e-3, 1e-8), (1e-3, 1e-12), (1e-4, 1e-8)))


def _slack(inverse=False, zero_scale=False):
    from memcap.construct import mahdavi

    def answer(a_star, a_plus, delta):
        c = 0.0 if zero_scale else mahdavi.saturation_scale(a_star, a_plus, delta)
        error = float(mahdavi.saturation_error(a_star, a_plus, c))
        return error / delta if inverse else delta / error
    return answer


def _last_token(first=False, refuse=True, own_error=None):
    from memcap.construct import mahdavi

    def answer(contexts, queries, examples, weight, head_dim):
        n = contexts.shape[-2]
        if not refuse:
            weight = min(weight, 0.999)
        if weight == 1 and own_error is not None:   # fails before claim1_head can refuse
            raise own_error
        theta = torch.full((len(examples), n), (1 - weight) / (n - 1), dtype=contexts.dtype, device=contexts.device)
        theta[:, 0 if first else -1] = weight
        return mahdavi.claim1_head(contexts, queries, examples, theta, head_dim=head_dim)
    return answer


def _step_summary(ranks=False, smallest_c=False, largest_sigma=False):
    from memcap import linalg

    def answer(kq):
        steps = [linalg.rank(kq.step_features(h)) for h in range(1, len(kq.steps) + 1)]
        gains = steps if ranks else [b - a for a, b in zip(steps, steps[1:])]
        scales = [st.scale for st in kq.steps]
        sigmas = [st.sigma_min for st in kq.steps]
        return (gains, min(scales) if smallest_c else max(scales),
                max(sigmas) if largest_sigma else min(sigmas))
    return answer


def _random_report():
    from memcap import linalg

    gen = torch.Generator().manual_seed(0)
    tokens = torch.randn(30, 5, 64, generator=gen, dtype=torch.float64, device="cpu")
    return linalg.assumption_report(tokens, tokens[:, 0], subsets=50, generator=gen)


_DUP = {64: 64 * 63 / (1000 * 999), 512: 512 * 511 / (2000 * 1999)}
_PAIRS = math.comb(1000, 2) / 465_000

WRONG += [
    ("ex-setting-2", lambda: ({64: 159, 16: 667}, {64: 1, 16: 1}), "only min(n, d_h) counts"),
    ("ex-setting-2", lambda: ({64: 323, 16: 667}, {64: 1, 16: 1}), "the parameter count is"),
    ("ex-setting-2", lambda: ({64: 322, 16: 667}, {64: 1, 16: 1}), "round up"),
    ("ex-setting-2", lambda: ([323], {64: 1, 16: 1}), "should have 2 entries"),
    # whole numbers, compared exactly: within rtol 1e-6 of 323 and of 2,666,752, yet wrong
    ("ex-setting-2", lambda: ({64: 323.0003, 16: 667}, {64: 2_666_752, 16: 1_408_768}), "should be a whole number"),
    ("ex-setting-2", lambda: ({64: 323, 16: 667}, {64: 2_666_754, 16: 1_408_768}), "parameter count is slightly too"),
    ("ex-setting-3", lambda: (_shared_and_repeated(softmax_axis=1),), "sum to one"),
    ("ex-setting-3", lambda: (_shared_and_repeated(swap=True),), "not the layer's"),
    ("ex-setting-3", lambda: (lambda layer, c, q: (c, q),), "should return three tensors"),
    ("ex-mahdavi-assumptions-2", lambda: (_planted(dependent=True), 7, 4), "too small"),
    ("ex-mahdavi-assumptions-2", lambda: (_planted(), 8, 4), "not the Kruskal rank the rule reports"),
    ("ex-mahdavi-assumptions-3", lambda: (_moment(start=1), 4, 10), "starting with the power 0"),
    ("ex-mahdavi-assumptions-3", lambda: (_moment(axis=0), 4, 10), "one row"),
    ("ex-mahdavi-assumptions-3", lambda: (_moment(), 3, 10), "the Kruskal rank is"),
    ("ex-mahdavi-toolkit-2", lambda: (1 + 5 * _eigen()[0], _eigen()[1], -1), "factor 1/n"),
    ("ex-mahdavi-toolkit-2", lambda: (1 + _eigen()[0], _eigen(lam_scale=5)[1], -1), "multiplicities"),
    ("ex-mahdavi-toolkit-2", lambda: (1 + _eigen()[0], _eigen()[1], 1), "lambda is too large"),
    ("ex-mahdavi-toolkit-3", lambda: (_perturbation("largest"),), "larger than needed"),
    ("ex-mahdavi-toolkit-3", lambda: (lambda A: 0 * A,), "lower rank than A"),
    ("ex-mahdavi-toolkit-3", lambda: (lambda A: A[:, :-1],), "of the shape of A"),
    ("ex-mahdavi-saturation-2", lambda: _scales(log=math.log10), "natural logarithm"),
    ("ex-mahdavi-saturation-2", lambda: _scales(tokens=32), "n - 1 tokens lose"),
    ("ex-mahdavi-saturation-3", lambda: (_slack(inverse=True),), "not the other way round"),
    ("ex-mahdavi-saturation-3", lambda: (_slack(zero_scale=True),), "at least 1"),
    ("ex-mahdavi-one-head-2", lambda: (32, 31, 2048), "not n"),
    ("ex-mahdavi-one-head-2", lambda: (16, 15, 32), "number of columns"),
    ("ex-mahdavi-one-head-3", lambda: (_last_token(first=True),), "attention of example"),
    ("ex-mahdavi-one-head-3", lambda: (_last_token(refuse=False),), "instead of refusing"),
    ("ex-mahdavi-one-head-3", lambda: (_last_token(own_error=NameError("name 'helper' is not defined")),),
     "raised NameError"),
    ("ex-mahdavi-one-head-3", lambda: (_last_token(own_error=ValueError("weight must be < 1")),),
     "claim1_head's refusal"),
    ("ex-mahdavi-one-head-3", lambda: (lambda c, q, ex, w, dh: None,), "should return a head"),
    ("ex-mahdavi-rank-of-z-2", lambda: ({64: 16, 32: 33, 8: 143},), "only min(n, d_h) counts"),
    ("ex-mahdavi-rank-of-z-3", lambda: (_step_summary(ranks=True),), "list of H - 1"),
    ("ex-mahdavi-rank-of-z-3", lambda: (_step_summary(smallest_c=True),), "largest scale c"),
    ("ex-mahdavi-rank-of-z-3", lambda: (_step_summary(largest_sigma=True),), "smallest sigma_min"),
    ("ex-mahdavi-real-models-2", lambda: ({64: (64 / 1000) ** 2, 512: (512 / 2000) ** 2},
                                          {64: False, 512: True}, _PAIRS), "without replacement"),
    ("ex-mahdavi-real-models-2", lambda: (_DUP, {64: True, 512: False}, _PAIRS), "verdict of the 99 % rule"),
    ("ex-mahdavi-real-models-2", lambda: (_DUP, {64: False, 512: True}, 1000 ** 2 / 465_000), "unordered pairs"),
    ("ex-mahdavi-real-models-3", lambda: (None,), "what linalg.assumption_report returns"),
    ("ex-mahdavi-real-models-3", lambda: (_random_report(),), "all the digits"),
    ("ex-mahdavi-experiments-2", lambda: (_mexp_guaranteed(chance=False), 323), "the chance term"),
    ("ex-mahdavi-experiments-2", lambda: ({T: 100 * v for T, v in _mexp_guaranteed().items()}, 323),
     "not a percentage"),
    ("ex-mahdavi-experiments-2", lambda: (_mexp_guaranteed(), 313), "not n = 32"),
    ("ex-mahdavi-experiments-2", lambda: (_mexp_guaranteed(), 322), "round up"),
    ("ex-mahdavi-experiments-2", lambda: (_mexp_guaranteed(), 322.9998), "heads_needed should be a whole number"),
    ("ex-mahdavi-experiments-2", lambda: (_mexp_guaranteed(count_shift=-1), 323), "each further head r - 1"),
    ("ex-mahdavi-experiments-3", lambda: (_mexp_specs(), [0.2, 0.4, 0.7]), "look like accuracies"),
    ("ex-mahdavi-experiments-3", lambda: (_mexp_specs(), [30.5, 60, 105]), "whole number"),
    ("ex-mahdavi-experiments-3", lambda: (_mexp_specs(), [30, 60, 210]), "between 0 and T = 150"),
    ("ex-mahdavi-experiments-3", lambda: (_mexp_specs(classes=10), [30, 60, 105]), "classes should be 100"),
    ("ex-mahdavi-experiments-3", lambda: (_mexp_specs()[:2], [30, 60]), "each of H = 1, 2, 4"),
    ("ex-mahdavi-experiments-4", lambda: (_edge_top(), _edge_shares(_edge_top(), "half")), "only half"),
    ("ex-mahdavi-experiments-4", lambda: (_edge_top(), _edge_shares(_edge_top(), "pairs")),
     "head-example pairs"),
    ("ex-mahdavi-experiments-4", lambda: (_edge_top(), _edge_shares(_edge_top(), "all")), "every head saturated"),
    ("ex-mahdavi-experiments-4", lambda: (_edge_top(), _edge_shares(_edge_top(), "percent")),
     "not percentages"),
    ("ex-mahdavi-experiments-4", lambda: ({T: np.repeat(w[:, :, None], 8, 2) for T, w in _edge_top().items()},
                                          _edge_shares(_edge_top())), "over the last axis (n)"),
    ("ex-mahdavi-experiments-4", lambda: ({T: w / 10 for T, w in _edge_top().items()}, _edge_shares(_edge_top())),
     "not the minimum"),
    ("ex-mahdavi-experiments-4", lambda: ({140: _edge_top()[140]}, _edge_shares(_edge_top())),
     "one entry for each of [140, 180]"),
    ("ex-dana-exp-2", lambda: (19, 12), "round up"),
    ("ex-dana-exp-2", lambda: (20, 11), "1.7 H d_h + d is still below"),
    ("ex-dana-exp-2", lambda: (19.99999, 12), "H_cor2 should be a whole number"),    # within rtol 1e-6 of 20
    ("ex-dana-exp-2", lambda: (20, 11.99999), "H_paper should be a whole number"),
    ("ex-dana-exp-3", lambda: (_dana_per_head(chance=False),), "guessed right by chance"),
    ("ex-dana-exp-3", lambda: (_dana_per_head(per_dh=False),), "in units of d_h"),
    ("ex-dana-exp-3", lambda: (lambda h, a, N, T, k: [0.0] * len(h),), "one number"),
    ("ex-syn-side-2", lambda: _side_costs(invert_dana=True), "examples per parameter"),
    ("ex-syn-side-2", lambda: _side_costs(value_dim=64), "times too large"),
    ("ex-syn-side-2", lambda: ({1: 260.0}, {}), "one entry for each of [1, 8, 31]"),
    ("ex-syn-side-3", lambda: (lambda mse, T, tol: mse ** 0.5 <= tol,), "the mean cannot decide"),
    ("ex-syn-side-3", lambda: (lambda mse, T, tol: mse <= tol,), "at least the mean"),
    ("ex-syn-side-3", lambda: (lambda mse, T, tol: "yes",), "True, False or None"),
    ("ex-syn-side-3", lambda: (_certify_as("int"),), "not 1/0 or a tensor"),
    ("ex-syn-open-2", lambda: (22, 64), "contributes d = 3"),
    ("ex-syn-open-2", lambda: (20, 61), "round up"),
    ("ex-syn-open-2", lambda: (20.99999, 61), "should be a whole number"),    # within rtol 1e-6 of 21
    ("ex-syn-open-3", lambda: (_open3_measure("formula"),), "not a measurement"),
    ("ex-syn-open-3", lambda: (_open3_measure("unsaturated"),), "share of unsaturated pairs"),
    ("ex-syn-open-3", lambda: (_open3_measure("unscaled"),), "scales the keys by 1/sqrt(d)"),
    ("ex-syn-open-3", lambda: (lambda task, weights: 100 * _open3_measure()(task, weights),), "between 0 and 1"),
    ("ex-syn-open-3", lambda: ({H: 0.5 for H in range(1, 7)},), "measure should be a function"),
    ("ex-syn-take-2", lambda: (_take_needed(inverse=True),), "times the examples"),
    ("ex-syn-take-2", lambda: (_take_needed(zero=True),), "no guaranteed rate"),
    ("ex-syn-take-2", lambda: (lambda row, examples: 1.0,), "should give a pair"),
    ("ex-syn-take-3", lambda: ((54, 1, 4), (60, 1, 4)), "at most 1000 trainable weights"),
    ("ex-syn-take-3", lambda: ((1, 8, 8), (54, 1, 4)), "larger count"),
    ("ex-syn-take-3", lambda: ((54, 1, 4), (10, 1, 4)), "more heads"),
    ("ex-syn-take-3", lambda: ((58, 54, 1, 4, 1000), (54, 1, 4)), "triple of whole numbers"),
]


@pytest.mark.parametrize("label, answer, fragment", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_typical_wrong_answers_are_rejected_with_a_helpful_message(label, answer, fragment, one_thread):
    result = run_check(label, *answer())
    assert not result.passed
    assert fragment in " ".join(result.message.split()), result.message
    assert not re.search(r"^\s*(def|return|import|for) ", result.message, re.MULTILINE)   # no solution code
    assert all(len(line) <= 100 for line in result.message.splitlines()), result.message


def test_edge_checker_passes_exact_shares_and_knows_fig3s_sizes():
    from memcap.experiments import mahdavi_fig3
    from memcap.textbook.exercises import experiments_mahdavi

    assert run_check("ex-mahdavi-experiments-4", _edge_top(), _edge_shares(_edge_top())).passed
    assert experiments_mahdavi.EDGE[0] == mahdavi_fig3.QUICK["examples"][4]       # Fig. 11.4's T for H = 4
    assert experiments_mahdavi.EDGE[1] == min(T for T in mahdavi_fig3.QUICK["capacity_candidates"]   # next rung
                                              if T > experiments_mahdavi.EDGE[0])



def test_statements_say_what_the_checker_checks_and_expects():
    """A checker that cannot train again says so in the statement, and an answer it requires (None for a model
    without a theorem) is asked for there."""
    for doc, label, phrase in (("book/experiments/mahdavi", "ex-mahdavi-experiments-3", "does not train again"),
                               ("book/experiments/mahdavi", "ex-mahdavi-experiments-4", "does not train again"),
                               ("book/synthesis/takeaways", "ex-syn-take-2", "`None` for a model without a theorem")):
        block = _exercise_block((ROOT / f"{doc}.md").read_text(encoding="utf-8"), label, "exercise")
        assert phrase in " ".join(block.split()), (label, phrase)


def test_syn_open_3s_checker_builds_the_statements_classifiers():
    from memcap import bounds
    from memcap.textbook.exercises import synthesis_open_questions as soq

    sizes = [(H, T, tuple(task.contexts.shape), tuple(w["W_K"].shape)) for H, T, task, w in soq._classifiers()]
    assert sizes == [(H, bounds.mha_capacity(H, 8, 16), (8, 16), (H, 16, 16)) for H in range(1, 7)]


def test_setting_2s_statement_solution_and_checker_give_the_same_sizes():
    from memcap.textbook.exercises import setting

    text = (ROOT / "book" / "setting.md").read_text()
    start = text.index(":label: ex-setting-2")
    statement = " ".join(text[start:text.index("```{exercise-end}", start)].split())
    solution = text[text.index("```{solution-start} ex-setting-2"):]
    for needle in (f"$d={setting.DIM}$", f"$n={setting.CONTEXT}$", f"$T={setting.EXAMPLES:,}$".replace(",", r"\,"),
                   *(f"$d_h={dh}$" for dh in setting.HEAD_DIMS)):
        assert needle in statement, needle
    assert (f"dim, n_ctx, T = {setting.DIM}, {setting.CONTEXT}, {setting.EXAMPLES:_}" in solution
            and f"for head_dim in {setting.HEAD_DIMS}:" in solution)

def test_numeric_answers_are_not_revealed_in_the_message():
    from memcap import bounds

    result = run_check("ex-mahdavi-tightness-2", {h: 2 * h for h in (1, 5, 10, 20, 40)})
    assert str(bounds.mha_shared_rank_bound(1, 32)) not in result.message.replace("case 1", "")
    assert "times too small" in result.message


def test_a_near_miss_is_told_by_its_relative_gap_not_as_about_1_times():
    from memcap.textbook.exercises.checking import Failure, close

    with pytest.raises(Failure) as failure:
        close(0.996, 1.0, "the ratio")
    assert "slightly too small (off by 0.4 %)" in str(failure.value) and "1 times" not in str(failure.value)
    with pytest.raises(Failure) as failure:
        close(1.5, 1.0, "the ratio")
    assert "about 1.5 times too large" in str(failure.value)


def test_a_near_whole_number_is_shown_in_full():
    from memcap.textbook.exercises.checking import Failure, whole_number

    # to 6 digits 20.99999 reads "21": the student would see "should be a whole number, got: 21"
    with pytest.raises(Failure) as failure:
        whole_number(20.99999, "the number of heads")
    assert "should be a whole number" in str(failure.value) and "20.99999" in str(failure.value)


def test_wrong_calls_say_how_to_call():
    assert "did you mean ex-mahdavi-skip-3" in run_check("ex-mahdavi-skp-3", 1).message
    message = run_check("ex-mahdavi-skip-3").message
    assert 'call it as check("ex-mahdavi-skip-3", second_layer)' in message
    answer = run_check("ex-mahdavi-skip-3", lambda *a: a[0])    # not a layer
    assert not answer.passed and "should return the second layer's weights" in answer.message


def test_check_prints_the_verdict_never_raises_and_remembers_the_answer(capsys):
    result = check("ex-mahdavi-skip-2", (-0.5, 2.5))
    assert isinstance(result, Result) and result and "passed (2 cases)" in capsys.readouterr().out
    failed = check("ex-mahdavi-skip-2", (0.0, 0.0))
    assert not failed and "not yet right" in capsys.readouterr().out
    assert grade("ex-mahdavi-skip-2") == {"exercise": "ex-mahdavi-skip-2", "passed": False,
                                          "message": failed.message}
    check("ex-mahdavi-skip-2", (-0.5, 2.5))
    assert grade("ex-mahdavi-skip-2")["passed"]


def test_grade_discards_what_the_answer_prints(capsys):
    def noisy(contexts, queries, labels, first_layer, heads, head_dim):
        print("x" * 10_000)
        raise RuntimeError("boom")

    check("ex-mahdavi-skip-3", noisy)
    capsys.readouterr()
    verdict = grade("ex-mahdavi-skip-3")
    assert not verdict["passed"] and "raised RuntimeError: boom" in verdict["message"]
    assert capsys.readouterr().out == ""


def test_checker_registration_is_validated():
    from memcap.exercises import checker

    with pytest.raises(ValueError, match="starting with 'ex-'"):
        checker("mahdavi-1", "book/x")
    with pytest.raises(ValueError, match="document path"):
        checker("ex-x-1", "x")
    with pytest.raises(ValueError, match="needs a docstring"):
        checker("ex-x-1", "book/x")(lambda answer: None)
    with pytest.raises(ValueError, match="already has a checker"):
        checker("ex-mahdavi-skip-2", "book/mahdavi/skip")(CHECKED["ex-mahdavi-skip-2"].function)


def test_every_chapter_with_exercises_is_in_a_problem_set_of_the_guide():
    text = (ROOT / "book" / "appendix" / "instructors.md").read_text(encoding="utf-8")
    block = re.search(r"```\{memcap-problem-sets\}\n(.*?)```", text, re.DOTALL)
    assert block, "the instructors' guide has no {memcap-problem-sets} block"
    listed = {c.strip() for line in block.group(1).splitlines() for c in line.partition(":")[2].split(",")}
    missing = sorted({r["doc"] for r in exercise_index(ROOT)} - listed)
    assert not missing, f"chapters with exercises missing from the guide's problem sets: {missing}"


def test_a_message_never_shows_expected_and_got_equal():
    """A wrong verdict given as ``numpy.bool_``, a count as ``numpy.int64``: the message tells them apart."""
    from memcap.textbook.exercises.checking import Failure, fail

    for expected, got in ((True, np.True_), ((10, 6), [10, 6]), (0.1 + 0.2, 0.3), (1, 1)):
        with pytest.raises(Failure) as info:
            fail("wrong", expected=expected, got=got)
        lines = str(info.value).splitlines()
        shown = [line.split(":", 1)[1].strip() for line in lines if line.strip().startswith(("expected", "got"))]
        assert len(shown) == 2 and shown[0] != shown[1], lines


def test_labels_and_answers_in_other_containers_never_raise(capsys):
    """``check`` never raises: a label in a list is read as the label, another type is a failed result."""
    assert check(["ex-mahdavi-skip-2"], np.array([-0.5, 2.5]))
    assert check("ex-mahdavi-skip-2", [[-0.5], [2.5]])
    assert check("ex-mahdavi-skip-2", torch.tensor([[-0.5, 2.5]], device="cpu"))
    refused = check({"label": 1}, 3)
    assert not refused and "the exercise's label should be a string" in refused.message
    capsys.readouterr()

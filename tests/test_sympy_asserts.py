"""A static check over the chapters' code cells: no assert compares an expression with itself.

Two patterns make a "SymPy check" true by construction, and both are flagged:

* a name assigned an expression and then asserted equal to that same expression (``x = a + b`` then
  ``assert sp.simplify(x - (b + a)) == 0``, or ``assert x == a + b``), possibly through a chain of
  assignments: names are replaced by the expression last assigned to them earlier in the same cell (a few
  levels deep), and the two sides of each equality compared as syntax trees, up to the order of the
  terms of a sum;
* the solution of an equation substituted back into it (``c = sp.solve(eq, x)[0]`` then an assert on
  ``eq.subs(x, c)``): ``f(f^{-1}(y)) = y``.

What no syntax check can see (a quantity built by hand as the solution of the very equation the assert
then checks, a construction read back) is for the reader of the chapter; the checks the chapters keep are
listed in the issue's closing note.
"""
from __future__ import annotations

import ast

import jupytext
import pytest

from tests.conftest import ROOT, toc_files

CHAPTERS = [ROOT / f"{doc}.md" for doc in toc_files()]
SIMPLIFIERS = {"simplify", "expand", "factor", "cancel", "together", "trigsimp", "powsimp", "nsimplify"}


def _substitute(node: ast.AST, defs: dict[str, ast.AST], depth: int = 4) -> ast.AST:
    """``node`` with every name replaced by its definition in ``defs``, ``depth`` levels deep."""
    if depth == 0:
        return node

    class Sub(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            if name.id in defs:
                return _substitute(defs[name.id], defs, depth - 1)
            return name

    return Sub().visit(ast.parse(ast.unparse(node), mode="eval").body)


def _canonical(node: ast.AST) -> str:
    """A string for the syntax tree of ``node``, the same for sums whose terms differ only in order."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        terms: list[ast.AST] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
                stack += [n.left, n.right]
            else:
                terms.append(n)
        return "Add(" + ", ".join(sorted(_canonical(t) for t in terms)) + ")"
    if isinstance(node, ast.AST):
        fields = ", ".join(f"{k}={_canonical(v)}" for k, v in ast.iter_fields(node) if k != "ctx")
        return f"{type(node).__name__}({fields})"
    if isinstance(node, list):
        return "[" + ", ".join(_canonical(v) for v in node) + "]"
    return repr(node)


def _solved_back(node: ast.AST) -> bool:
    """Whether ``node`` substitutes the solution of an equation (a ``solve`` call) for a variable."""
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "subs"
                and any(isinstance(c, ast.Call) and getattr(c.func, "attr", getattr(c.func, "id", "")) == "solve"
                        for arg in sub.args for c in ast.walk(arg))):
            return True
    return False


def _is_zero(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == 0
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "zeros")


def _simplified_difference(node: ast.AST) -> tuple[ast.AST, ast.AST] | None:
    """``(a, b)`` for ``sp.simplify(a - b)`` (or expand, factor, ...) or a bare ``a - b``."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in SIMPLIFIERS:
            node = node.args[0]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return node.left, node.right
    return None


def _equalities(test: ast.AST):
    """Every pair of expressions an assert's test claims equal."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            yield from _equalities(value)
        return
    if not isinstance(test, ast.Compare):
        return
    sides = [test.left, *test.comparators]
    for op, a, b in zip(test.ops, sides, sides[1:]):
        if not isinstance(op, ast.Eq):
            continue
        for x, y in ((a, b), (b, a)):
            diff = _simplified_difference(x)
            if diff is not None and _is_zero(y):
                yield diff
                break
        else:
            yield a, b


def self_comparisons(source: str) -> list[str]:
    """The asserts of one code cell that compare an expression with itself after substitution."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    defs: dict[str, ast.AST] = {}
    found = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assert):
            if _solved_back(_substitute(stmt.test, defs)):
                found.append(ast.unparse(stmt))
                continue
            for a, b in _equalities(stmt.test):
                if _canonical(_substitute(a, defs)) == _canonical(_substitute(b, defs)):
                    found.append(ast.unparse(stmt))
                    break
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            defs[stmt.targets[0].id] = stmt.value
        else:
            for target in ast.walk(stmt):        # a name rebound some other way is no longer known
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                    defs.pop(target.id, None)
    return found


def code_cells(path) -> list[str]:
    """The source of every code cell of a chapter (IPython magics dropped)."""
    nb = jupytext.read(path)
    return ["\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for cell in nb.cells if cell.cell_type == "code"]


@pytest.mark.parametrize("source", [
    "x = a + b\nassert sp.simplify(x - (a + b)) == 0",
    "x = a + b\nassert x == a + b",
    "x = a * b\ny = x + 1\nassert sp.expand(y - (a * b + 1)) == sp.zeros(2, 2)",
    "M = sp.eye(3) + J / 3\nassert M == sp.eye(3) + J / 3 and M.det() == 2",
    "x = f(t)\nassert 0 == sp.simplify(x - f(t))",
    "x = a + b * c\nassert sp.simplify(x - (b * c + a)) == 0",           # terms reordered
    "c = sp.solve(sp.Eq(f, y), v)[0]\nassert sp.simplify(f.subs(v, c) - y) == 0",
    "assert sp.simplify(f.subs(v, sp.solve(f - y, v)[0]) - y) == 0",
])
def test_the_check_flags_an_expression_compared_with_itself(source):
    assert self_comparisons(source)


@pytest.mark.parametrize("source", [
    "x = a + b\nassert sp.expand(x ** 2 - (a ** 2 + 2 * a * b + b ** 2)) == 0",
    "x = A * B\nassert x == B * A",                      # products are not reordered (matrices)
    "x = sp.eye(3) + J / 3\nassert x.det() == 2",
    "x = a + b\nx += 1\nassert x == a + b",                          # x was rebound
    "c = solve_for(s, g)\nassert sp.simplify(bound(c) - delta) == 0",
])
def test_the_check_lets_real_checks_through(source):
    assert not self_comparisons(source)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_chapter_asserts_an_expression_equal_to_itself(chapter):
    found = [hit for cell in code_cells(chapter) for hit in self_comparisons(cell)]
    assert not found, f"{chapter.name}: asserts true by construction: {found}"

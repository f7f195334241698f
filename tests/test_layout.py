"""The package's layout is its architecture: three concerns, one place each, and imports in one direction.

- the science (``memcap``'s own modules, ``construct/``, ``train/``, ``experiments/``) imports neither the
  real-model code (``memcap.real``) nor the book's machinery (``memcap.textbook``, and ``memcap.exercises``,
  the students' door into it);
- the real-model code imports the science's core, never ``memcap.experiments`` nor the book's machinery;
- the command line (``memcap.__main__``) may import all three;
- the science and the real-model code import on a plain install (no Sphinx, no myst-nb), and so do the
  students' ``check`` and the grader; the Sphinx extension says which extra it needs.

Imports are read from the source (``ast``), those inside functions included, and so are the module names
the front door (``memcap.__init__``) loads lazily.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memcap"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every memcap module ``path`` imports (absolute or relative, at any depth of the code)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    if name == "memcap":  # the front door's lazy table: {public name: "module"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                found.update(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return {m for m in found if m == "memcap" or m.startswith("memcap.")}


def concern(module: str) -> str:
    """'textbook', 'real', 'science', or 'cli' (``python -m memcap``, the door to all three): the place of
    ``module`` in the layout."""
    if module == "memcap.__main__":
        return "cli"
    if module == "memcap.exercises" or module.startswith(("memcap.textbook.", "memcap.exercises.")) \
            or module == "memcap.textbook":
        return "textbook"
    if module == "memcap.real" or module.startswith("memcap.real."):
        return "real"
    return "science"


FORBIDDEN = {
    "science": ("textbook", "real"),
    "real": ("textbook",),
}


def _violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _module_name(path)
        for target in sorted(_imports(path)):
            if concern(target) in FORBIDDEN.get(concern(source), ()):
                found.append(f"{source} imports {target}")
            if concern(source) == "real" and concern(target) == "science" \
                    and (target == "memcap.experiments" or target.startswith("memcap.experiments.")):
                found.append(f"{source} imports {target} (the real-model code never imports the experiments)")
    return found


def test_no_import_crosses_the_rule():
    assert _violations() == []


def test_the_rule_catches_a_crossing(tmp_path, monkeypatch):
    """The checker itself: a science module importing the book's machinery, or real code importing an
    experiment, is reported (inside a function too)."""
    assert concern("memcap.textbook.page") == "textbook" and concern("memcap.exercises") == "textbook"
    assert concern("memcap.real.vit") == "real" and concern("memcap.experiments.sweep") == "science"
    assert concern("memcap.__main__") == "cli"
    fake = PACKAGE / "models.py"
    tree_source = "def f():\n    from memcap.textbook.page import table\n    from . import exercises\n"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: tree_source)
    assert {"memcap.textbook.page", "memcap.textbook.page.table", "memcap.exercises"} <= _imports(fake)


def test_every_module_has_a_place():
    """No module left at the top level of the package that belongs to another concern by name."""
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert not top & {"book", "site", "course", "edition", "grading", "bench", "realdata", "vit",
                      "transformer", "textmodels", "real_assumptions"}
    # memcap/sweep.py is only the old name of memcap.experiments.sweep (see the test below): no code of its own
    alias = ast.parse((PACKAGE / "sweep.py").read_text())
    assert [type(node).__name__ for node in alias.body] == ["Expr", "Import", "ImportFrom", "Assign"]
    for folder in ("construct", "train", "experiments", "real", "textbook"):
        assert (PACKAGE / folder / "__init__.py").is_file(), folder


PLAIN_INSTALL = textwrap.dedent("""
    import importlib, importlib.abc, pkgutil, sys

    class NoBookExtra(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"sphinx", "docutils", "myst_nb", "jupyter_book", "sphinx_proof"}:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoBookExtra())
    import memcap
    names = [m.name for m in pkgutil.walk_packages(memcap.__path__, "memcap.")]
    refused = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            refused.append((name, str(exc)))
    print(repr(refused))
""")


@pytest.mark.slow
def test_a_plain_install_imports_all_but_the_sphinx_extension():
    """Without the book extra, every module imports except the Sphinx extension, whose error names the extra;
    the students' ``from memcap.exercises import check`` works."""
    done = subprocess.run([sys.executable, "-c", PLAIN_INSTALL], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    refused = dict(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
    assert set(refused) == {"memcap.textbook.site", "memcap.textbook.course"}, refused
    for message in refused.values():
        assert "book extra" in message and "pip install -e '.[book]'" in message


def test_students_check_is_the_checkers_check():
    import memcap.exercises as door
    import memcap.textbook.exercises as checkers

    assert door.check is checkers.check and door.registry is checkers.registry
    assert set(door.__all__) == set(checkers.__all__)


def test_the_old_name_of_the_sweep_module_is_the_module_itself():
    """Scripts written before the layout change (``from memcap.sweep import run_job``, the project's shared
    paper_estimate.py among them) get memcap.experiments.sweep itself, not a copy that could drift."""
    import memcap.experiments.sweep as sweep
    import memcap.sweep as old
    from memcap.sweep import run_job

    assert old is sweep and run_job is sweep.run_job

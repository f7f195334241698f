"""Fast checks of the sources: ruff over the library and the tests, and every chapter as a jupytext notebook.

They fail in seconds on what the strict build would otherwise find minutes later (a chapter that does not
parse, a syntax error in a cell) and on style drift (unused imports, import order, pyflakes errors).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys

import jupytext
import pytest
from jupytext.compare import compare_notebooks

from tests.conftest import ROOT, toc_files

FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)


def test_ruff_finds_nothing_in_the_library_and_tests():
    """Lint and import order, configured in pyproject.toml ([tool.ruff]); fix with ``ruff check --fix``."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "memcap", "tests"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert "No module named ruff" not in proc.stderr, "ruff is missing: pip install -r requirements.txt"
    assert proc.returncode == 0, f"ruff check memcap tests:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"


@pytest.mark.parametrize("doc", toc_files())
def test_chapter_is_a_clean_myst_notebook(doc):
    """What ``jupytext --test`` checks, plus: kernel, no outputs, every code cell is valid Python."""
    path = ROOT / f"{doc}.md"
    text = path.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="md:myst")
    code = [c for c in nb.cells if c.cell_type == "code"]
    if code:   # a chapter that runs code declares how (pages without code may be plain Markdown)
        front = FRONT_MATTER.match(text)
        assert front, f"{doc}: code cells but no front matter"
        assert nb.metadata.get("jupytext", {}).get("text_representation", {}).get("format_name") == "myst", (
            f"{doc}: front matter must declare jupytext's myst format")
        kernel = nb.metadata.get("kernelspec", {})
        assert (kernel.get("name"), kernel.get("language")) == ("python3", "python"), f"{doc}: kernelspec {kernel}"
    for i, cell in enumerate(code):
        assert not cell.get("outputs") and cell.get("execution_count") is None, f"{doc}: cell {i} has outputs"
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        try:
            ast.parse(source)
        except SyntaxError as err:
            pytest.fail(f"{doc}: code cell {i} is not valid Python: {err}")
    assert not path.with_suffix(".ipynb").exists(), f"{doc}: a paired .ipynb (with outputs) sits beside it"
    # jupytext --test: writing the notebook back to MyST and reading it again gives the same notebook
    compare_notebooks(jupytext.reads(jupytext.writes(nb, fmt="md:myst"), fmt="md:myst"), nb, "md:myst")


def test_compare_notebooks_does_catch_a_changed_cell():
    """The round-trip check above is not vacuous."""
    nb = jupytext.reads("---\nkernelspec: {name: python3, language: python, display_name: Python 3}\n---\n"
                        "```{code-cell} ipython3\n1 + 1\n```\n", fmt="md:myst")
    other = jupytext.reads(jupytext.writes(nb, fmt="md:myst").replace("1 + 1", "1 + 2"), fmt="md:myst")
    with pytest.raises(Exception, match="1 \\+ 2|1 \\+ 1"):
        compare_notebooks(other, nb, "md:myst")


def test_tests_read_nothing_outside_the_repository():
    """A clone anywhere must pass: what a test needs lives in the repository (tests/data/)."""
    pattern = re.compile(r"ROOT\.parent|parents\[[2-9]\]|\.\./shared|/work/")
    offenders = [f"{p.name}:{i + 1}" for p in sorted((ROOT / "tests").glob("*.py")) if p.name != "test_sources.py"
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines()) if pattern.search(line)]
    assert not offenders, f"tests refer to paths outside the repository: {offenders}"


def test_bibliography_parses_with_unique_keys():
    """book/references.bib parses (one unclosed entry once broke the whole strict build only at its very
    end) and no key is defined twice (merges of branches that each add a reference)."""
    from pybtex.database import parse_file

    path = ROOT / "book" / "references.bib"
    keys = re.findall(r"(?m)^@\w+\{([^,\s]+),", path.read_text())
    assert len(keys) == len(set(keys)), f"duplicate keys: {sorted({k for k in keys if keys.count(k) > 1})}"
    assert sorted(parse_file(str(path)).entries) == sorted(keys)

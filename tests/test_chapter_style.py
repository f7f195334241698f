"""House rules of the chapters' sources that a reader of the site would otherwise pay for.

See CONTRIBUTING.md. Fast: reads the MyST sources, executes nothing.
"""
from __future__ import annotations

import ast
import re

import jupytext
import pytest

from tests.conftest import ROOT, toc_files

MAX_CODE_LINE = 79
"""Characters per code line: 80 fit the text column at desktop width, solutions included."""
HIDDEN = {"hide-cell", "remove-cell", "hide-input", "remove-input"}
CHECK_CALLS = {"glue", "glue_sci", "glue_figure"}

CHAPTERS = [d for d in toc_files()]


def _cells(doc: str):
    notebook = jupytext.read(ROOT / f"{doc}.md")
    return [c for c in notebook.cells if c.cell_type == "code"]


def _is_check_only(source: str) -> bool:
    """True if every statement is an import, an assert, or a call of glue / glue_sci / glue_figure."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: not a check-only cell
        return False
    return bool(tree.body) and all(_is_check(node) for node in tree.body)


def _is_check(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assert)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in CHECK_CALLS
    if isinstance(node, ast.For):
        return all(_is_check(n) for n in node.body)
    return False


@pytest.mark.parametrize("doc", CHAPTERS)
def test_code_lines_fit_the_column(doc):
    long = [(i, line) for cell in _cells(doc) for i, line in enumerate(cell.source.splitlines())
            if len(line) > MAX_CODE_LINE]
    assert not long, (f"{doc}: {len(long)} code line(s) longer than {MAX_CODE_LINE} characters, e.g. "
                      f"{long[0][1]!r}")


@pytest.mark.parametrize("doc", CHAPTERS)
def test_refusals_are_demonstrated_with_expect_refusal(doc):
    text = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
    assert "except ValueError" not in text and "except TypeError" not in text, (
        f"{doc}: show a refusal with memcap.textbook.page.expect_refusal(...), which fails the build when the "
        "refusal disappears; a try/except that prints the error cannot fail")


@pytest.mark.parametrize("doc", CHAPTERS)
def test_check_only_cells_are_collapsed(doc):
    visible = [c.source.splitlines()[0] for c in _cells(doc)
               if _is_check_only(c.source) and not HIDDEN & set(c.metadata.get("tags", []))]
    assert not visible, (f"{doc}: cells made only of imports, asserts and glue calls belong in a collapsed "
                         f"verification cell (tags: [hide-cell]); visible ones start with {visible[:3]}")


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_glued_figure_is_placed_with_a_name(doc):
    text = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
    glued = set(re.findall(r"glue_figure\(\s*[\"']([^\"']+)[\"']", text))
    placed = dict(re.findall(r"```\{glue:figure\}\s+(\S+)\s*\n((?::[^\n]*\n)*)", text))
    for key in glued:
        assert key in placed, f"{doc}: figure {key!r} is glued but never placed with {{glue:figure}}"
        assert ":name:" in placed[key], f"{doc}: {{glue:figure}} {key} needs a :name: label (and a caption)"


def test_check_only_detection():
    assert _is_check_only("assert x == 1\nglue('a', 1, display=False)\nfrom memcap import book")
    assert not _is_check_only("y = f(x)\nassert y == 1")
    assert not _is_check_only("%matplotlib inline")
    assert _is_check_only("for k in ks:\n    assert k > 0")
    assert not _is_check_only("for k in ks:\n    print(k)")


GLUE_TEXT_CALLS = {"glue", "glue_md", "Markdown"}


def _bold_in_glued_strings(source: str) -> list[str]:
    """String literals holding ``**`` inside glue(...), glue_md(...) or Markdown(...) calls of a cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in GLUE_TEXT_CALLS:
                found += [s.value for arg in node.args for s in ast.walk(arg)
                          if isinstance(s, ast.Constant) and isinstance(s.value, str) and "**" in s.value]
    return found


@pytest.mark.parametrize("doc", CHAPTERS)
def test_generated_clauses_are_not_bolded(doc):
    bold = [s for cell in _cells(doc) for s in _bold_in_glued_strings(cell.source)]
    assert not bold, (f"{doc}: a generated clause is bolded ({bold[0]!r}); a glued sentence sits inside a "
                      "paragraph, where bold belongs to the prose around it, not to a whole clause")


def test_bold_detection():
    assert _bold_in_glued_strings("glue('k', '**All** hold', display=False)")
    assert _bold_in_glued_strings("glue_md('k', 'x' if a else f'**{n}** fail')")
    assert not _bold_in_glued_strings("glue('k', n ** 2, display=False)")
    assert not _bold_in_glued_strings("text = '**bold** outside glue'")


_MATH = re.compile(r"(?<!\\)\$[^$]+(?<!\\)\$")


def _bars_in_table_math(text: str) -> list[str]:
    """Rows of Markdown pipe tables (outside code) whose ``$...$`` holds ``|`` (bare or as ``\\|``)."""
    found, fence = [], None
    for line in text.splitlines():
        stripped = line.strip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            fence = None if fence and marker.group(1).startswith(fence) else (fence or marker.group(1))
            continue
        if fence is None and stripped.startswith("|") and any("|" in m for m in _MATH.findall(stripped)):
            found.append(stripped)
    return found


@pytest.mark.parametrize("doc", CHAPTERS)
def test_no_bar_inside_math_in_a_markdown_table(doc):
    rows = _bars_in_table_math((ROOT / f"{doc}.md").read_text())
    assert not rows, (f"{doc}: a table row has | inside math ({rows[0]!r}): the row splits there or loses "
                      "the backslash of \\|; write \\vert / \\Vert, or build the table with memcap.textbook.page.table")


def test_bar_in_table_math_detection():
    assert _bars_in_table_math(r"| $\|x\|_2$ | 1 |")
    assert _bars_in_table_math("| a | $|x|$ |")
    assert not _bars_in_table_math("| a | $\\vert x\\vert$ |\n$|x|$ outside a table")
    assert not _bars_in_table_math("```{code-cell}\n| $|x|$ |\n```")


CODE_DIRECTIVES = {"code-cell", "code", "code-block", "math", "eval-rst", "raw"}
"""Directives whose body is not Markdown."""
_NUMBERED = re.compile(r"\s*1[.)](\s|$)")
_ITEM = re.compile(r"\s*([-+*]|\d+[.)])\s")


def _accidental_numbered_items(text: str) -> list[str]:
    """Lines of Markdown (prose, or the body of a directive such as a figure's caption; not code) that
    start with ``1.`` or ``1)`` right after a line of prose: CommonMark lets such a line interrupt the
    paragraph and open a numbered list, so a wrapped caption or sentence ("... (Assumption" / "1) and
    ...") breaks into a list item."""
    found, fences, previous = [], [], ""   # fences: (backticks, holds code) of the open fences
    for line in text.splitlines():
        marker = re.match(r"(`{3,}|~{3,})\s*(\S*)", line.strip())
        if marker and fences and marker.group(1).startswith(fences[-1][0]) and not marker.group(2):
            fences.pop()
        elif marker and not (fences and fences[-1][1]):
            info = marker.group(2)
            code = not info.startswith("{") or info.strip("{}") in CODE_DIRECTIVES
            fences.append((marker.group(1), code))
        in_code = bool(fences) and fences[-1][1]
        if marker or in_code:
            previous = ""
            continue
        if _NUMBERED.match(line) and previous.strip() and not _ITEM.match(previous) \
                and not previous.lstrip().startswith(":"):   # a directive's option line
            found.append(line.strip())
        previous = line
    return found


@pytest.mark.parametrize("doc", CHAPTERS)
def test_no_wrapped_line_opens_a_numbered_list(doc):
    lines = _accidental_numbered_items((ROOT / f"{doc}.md").read_text())
    assert not lines, (f"{doc}: a line starts with 1. or 1) right after a line of prose ({lines[0]!r}): it "
                       "opens a numbered list there; rewrap the paragraph, or put a blank line before a list")


def test_accidental_numbered_item_detection():
    assert _accidental_numbered_items("the dashed lines mark $n$ (Assumption\n1) and $d$")
    assert _accidental_numbered_items("a sentence that ends in\n1. a list by accident")
    assert not _accidental_numbered_items("Steps:\n\n1. one\n2. two")
    assert not _accidental_numbered_items("1. one\n1. two\n- three\n1) four")
    assert _accidental_numbered_items("```{glue:figure} key\n:name: f\n\nmark $n$ (Assumption\n1) and $d$.\n```")
    assert not _accidental_numbered_items("```{code-cell}\nx = (a\n1) and b\n```")
    assert not _accidental_numbered_items("````md\n```{code-cell}\n```\nx = (a\n1) and b\n````\ntext")


_LATEX_ESCAPE = re.compile(r"[\t\f\b\r\a\v][A-Za-z]|\n(?:abla|eq|u|ot|e|i|mid|ewline)\b")
"""What a LaTeX command becomes in a non-raw string: ``"\\text"`` is a tab and ``ext``."""


def _latex_escapes(source: str) -> list[str]:
    """String constants of a cell where a backslash escape ate a LaTeX command (``\\t``ext, ``\\f``rac ...)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _LATEX_ESCAPE.search(node.value)]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_latex_in_code_is_in_raw_strings(doc):
    bad = [s for cell in _cells(doc) for s in _latex_escapes(cell.source)]
    assert not bad, (f"{doc}: a string lost a LaTeX backslash to a Python escape ({bad[0]!r}); "
                     "write it as a raw string r\"...\"")


def test_latex_escape_detection():
    assert _latex_escapes('x = "$d_{\\text{out}}$"')
    assert _latex_escapes('f"$\\frac{{1}}{{2}}$ and {a}"')
    assert _latex_escapes('s = "$\\beta$"')
    assert _latex_escapes('s = "$\\nabla f$"')
    assert not _latex_escapes('x = r"$d_{\\text{out}}$"')
    assert not _latex_escapes('print("a\\nThe end\\t= 1")')
    assert not _latex_escapes('x = "$\\\\beta$"')


_EXERCISE_OPENING = re.compile(r"```\{exercise-start\}\n(?::[^\n]*\n)*```\n([^\n]*)")
_EXERCISE_TAG = re.compile(r"^\*\*\((Coding|Proof|Computation), (easy|medium|hard), \d+ min\.\)\*\* ")


def _untagged_exercises(text: str) -> list[str]:
    return [first[:50] for first in _EXERCISE_OPENING.findall(text) if not _EXERCISE_TAG.match(first)]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_exercise_opens_with_its_tag_in_one_style(doc):
    """``**(Kind, difficulty, N min.)**``, bold, on every exercise of every chapter."""
    assert _untagged_exercises((ROOT / f"{doc}.md").read_text()) == []


def test_exercise_tag_detection():
    start = "```{exercise-start}\n:label: ex-x-1\n```\n"
    assert _untagged_exercises(start + "**(Proof, easy, 10 min.)** Show that") == []
    assert _untagged_exercises(start + "(Proof, easy, 10 min.) Show that") == ["(Proof, easy, 10 min.) Show that"]
    assert _untagged_exercises(start + "Show that") == ["Show that"]


_MATH_GLUE = re.compile(r"""\b(?:glue_sci|glue_md|page\.glue_md|page\.glue_sci)\(\s*["']([^"'{}]+)["']""")


@pytest.mark.parametrize("doc", CHAPTERS)
def test_math_glued_values_are_pasted_as_markdown(doc):
    """``glue_sci`` and ``glue_md`` glue markdown (math such as ``$3 \\times 10^{-6}$``): pasted with
    ``{glue:text}`` or ``{glue}`` the reader sees the raw dollars, which only the browser check of a
    built site would catch, after a whole build."""
    text = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
    names = set(_MATH_GLUE.findall(text))
    raw = sorted({name for name in names
                  if re.search(r"\{glue(?::text)?\}`" + re.escape(name) + r"[`:]", text)})
    assert not raw, f"{doc}: paste {raw} with {{glue:md}}`name:myst`, not {{glue:text}} or {{glue}}"

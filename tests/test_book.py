"""The strict build of the whole book, and what it must contain."""
from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import jupytext
import pytest

from tests.conftest import ROOT, toc_files

DATA = ROOT / "tests" / "data"   # copies of the project's shared inventory.tsv and figures.tsv
LABEL_RE = re.compile(r"^:label:\s*(\S+)\s*$", re.MULTILINE)


def _chapter_sources() -> dict[str, Path]:
    return {f: ROOT / f"{f}.md" for f in toc_files()}


def test_toc_files_exist_and_are_jupytext_markdown():
    for name, path in _chapter_sources().items():
        assert path.is_file(), f"_toc.yml names {name} but {path} does not exist"
        nb = jupytext.read(path)
        assert nb.metadata.get("kernelspec", {}).get("name") == "python3" or not any(
            c.cell_type == "code" for c in nb.cells), f"{name}: code cells need a python3 kernelspec"


def test_no_outputs_or_images_are_committed():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    bad = [f for f in tracked if re.search(r"\.(ipynb|png|jpe?g|svg|pdf|pkl|pickle)$", f)]
    assert not bad, f"outputs, images or pickles are committed: {bad}"


def test_labels_are_namespaced_and_unique():
    """Theorem-like labels come from inventory.tsv; exercises are namespaced ex-<chapter>-<k>."""
    inventory = {row["label"] for row in csv.DictReader(open(DATA / "inventory.tsv"), delimiter="\t")}
    seen: dict[str, str] = {}
    for name, path in _chapter_sources().items():
        for label in LABEL_RE.findall(path.read_text(encoding="utf-8")):
            assert label not in seen, f"label {label} defined in both {seen[label]} and {name}"
            seen[label] = name
            if label.startswith(("mha-", "aot-")) and not re.match(r"^(mha|aot)-fig-", label):
                assert label in inventory, f"{name}: label {label} is not in inventory.tsv"
            assert re.match(r"^(mha|aot|ex|setting|syn|book)-[a-z0-9-]+$", label), (
                f"{name}: label {label} is not namespaced (mha-*, aot-*, ex-<chapter>-<k>, setting-*, syn-*, book-*)")


@pytest.mark.slow
def test_strict_build_succeeds(site):
    assert site.returncode == 0, f"the strict build failed:\n{site.log[-6000:]}"
    # Sphinx writes "WARNING:"/"ERROR:"; the kernels' own "[IPKernelApp] WARNING | running over TCP"
    # start-up notice is not about the book and does not reach the pages. Nor is the Jupyter client's
    # "ERROR:tornado.general:Uncaught exception in ZMQStream callback", logged once (2026-12-08, fbb5983)
    # by the kernel messaging of a build that returned 0 with every page whole: a cell that fails still
    # fails the build ("Executing notebook failed", a non-zero return code).
    noise = ("[IPKernelApp]", "ERROR:tornado.general:Uncaught exception in ZMQStream callback")
    warnings = [line for line in site.log.splitlines()
                if ("WARNING:" in line or "ERROR:" in line) and not line.startswith(noise)]
    assert not warnings, "the build printed warnings:\n" + "\n".join(warnings[:20])


@pytest.mark.slow
def test_every_chapter_was_built_and_executed(site):
    """Each toc chapter has a page; each chapter with code shows outputs; the device line is said once, on the
    build-status page, not on every chapter."""
    for name, path in _chapter_sources().items():
        page = site.html / f"{name}.html"
        assert page.is_file(), f"no page for {name}"
        nb = jupytext.read(path)
        if any(c.cell_type == "code" for c in nb.cells):
            html = page.read_text(encoding="utf-8")
            # a cell's output, or what a cell glued (myst-nb pastes glued values only from an executed notebook)
            shown = ("cell_output", 'class="pasted-text"', 'class="pasted-inline')
            assert any(mark in html for mark in shown), f"{name} has code cells but no outputs: it was not executed"
            if name != "book/appendix/status":
                assert "Ran on " not in html, f"{name} prints memcap.device.report(): the status page says it"


@pytest.mark.slow
def test_site_references_nothing_online(site):
    """Scripts, styles and fonts come from the build output: the site works offline."""
    pattern = re.compile(r"""<(?:script|link|img)[^>]+(?:src|href)=["'](https?:)?//""", re.IGNORECASE)
    for page in site.html.rglob("*.html"):
        hits = pattern.findall(page.read_text(encoding="utf-8"))
        assert not hits, f"{page.relative_to(site.html)} loads something from the network"
    assert any(site.html.rglob("tex-chtml*.js")), "MathJax is not served from the build output"


@pytest.mark.slow
def test_status_page_lists_every_executed_chapter(site):
    """The execution table links every chapter with code (by its title, in book order) and says it was
    executed; the machine table names the device, PyTorch and the commit."""
    html = (site.html / "book/appendix/status.html").read_text(encoding="utf-8")
    table = html[html.index('class="memcap-status'):]
    rows = re.findall(r'<tr class="row-[a-z]+"><td><p><a class="reference internal" href="([^"]+)"', table)
    linked = [Path("book/appendix", href).resolve().relative_to(Path("book").resolve().parent) for href in rows]
    linked = [str(p.with_suffix("")) for p in linked]
    for name, path in _chapter_sources().items():
        if name == "book/appendix/status":    # the page itself, filled in after every other chapter ran
            continue
        if any(c.cell_type == "code" for c in jupytext.read(path).cells):
            assert name in linked, f"the status page's execution table has no row for {name}"
    assert table.count("<p>executed</p>") >= len(linked) - 1
    assert "device" in html and "PyTorch" in html and "git commit" in html


@pytest.mark.slow
@pytest.mark.parametrize("chapter", ["mahdavi", "dana"])
def test_experiments_chapters_show_their_profile_tables(site, chapter):
    """Each experiments chapter shows the table of its two profiles (memcap.experiments.grid_tables): a table
    with as many columns as the grid table, whose plain-text headers match (a cell whose last expression is
    not the table call shows nothing, and no check of the page's layout notices)."""
    import importlib

    from memcap.experiments import grid_tables

    names = [f"{chapter}_fig{k}" for k in ("2a", "2b", "2c", "3", "4", "5")] if chapter == "mahdavi" else \
        [f"dana_fig{k}" for k in ("1a", "1b", "2a", "2b", "3", "4")]
    grid = getattr(grid_tables, f"{chapter}_profiles")([importlib.import_module(f"memcap.experiments.{n}")
                                                         for n in names])
    html = (site.html / f"book/experiments/{chapter}.html").read_text(encoding="utf-8")
    plain = [h for h in grid.header if "$" not in h]
    found = []
    for table in re.findall(r"<table.*?</table>", html, re.S):
        heads = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
        found.append(heads)
        if len(heads) == len(grid.header) and all(h in heads for h in plain):
            return
    raise AssertionError(f"no table of the {chapter} chapter has the profile table's headers {grid.header}: {found}")


@pytest.mark.slow
def test_status_page_lists_the_figures_in_book_order(site):
    """The table of which profile each experiment used lists every figure of a sweep, in the order the
    book numbers them (a reader looks a figure up by its number)."""
    html = (site.html / "book/appendix/status.html").read_text(encoding="utf-8")
    start = html.index('id="which-profile-each-experiment-used"')
    table = html[start:html.index("</table>", start)]
    numbers = [tuple(map(int, m)) for m in re.findall(r"Fig\. (\d+)\.(\d+)", table)]
    assert len(numbers) >= 20, table[:2000]    # the 18 experiments' figures, syn-fig-ratio and mha-fig-1
    assert numbers == sorted(numbers), f"figures out of the book's order: {numbers}"

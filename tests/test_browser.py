"""The built site in a real browser (Debian's Chromium driven by Playwright; no browser download).

Every page of the strict build is opened at desktop (1280 px) and phone (390 px) width and checked for
what a reader would notice (see ``tests/pagecheck.py``): raw TeX or ``$`` left in the text, collapsed
solutions included; display equations, code and outputs wider than their box; figures without a numbered
caption, with a file path as alt text, or shrunk below 90 % of their pixels (at desktop width); figures wider
than the text column or the screen, or scrolling sideways, and figure text below 9 px as shown, read from the
drawing the browser chose (the phone drawing at 390 px), at both widths; unnumbered theorem boxes;
formulas shrunk below 85 % of their text, or scrolling sideways with no faded edge to show it; duplicated ids;
requests that fail or leave the machine; JavaScript errors.
Then: every local link answers, the download menu offers each chapter as .md and .ipynb, the source
archive and the book's PDF, and a solution dropdown opens. Screenshots land in ``$MEMCAP_SCREENSHOTS`` (default: a
temporary folder) so a person can look at them.
"""
from __future__ import annotations

import io
import os
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests import pagecheck
from tests.conftest import ROOT, require_system_tool, toc_files

pytestmark = [pytest.mark.slow, pytest.mark.browser]

_links: set[str] = set()


@pytest.fixture(scope="module")
def server(site, site_pdf):
    """The built site, its PDF included (the download menu links it)."""
    with pagecheck.serve(site.html) as base:
        yield base


@pytest.fixture(scope="session", autouse=True)
def chromium_installed():
    """Skip (fail with CI=true) before the site is built when Chromium is missing: .ci/run installs it."""
    require_system_tool(None if pagecheck.chromium_path() else pagecheck.MISSING_CHROMIUM)


@pytest.fixture(scope="module")
def browser():
    with pagecheck.chromium() as b:
        yield b


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("MEMCAP_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("width", [pagecheck.DESKTOP, pagecheck.PHONE])
@pytest.mark.parametrize("doc", toc_files())
def test_page_reads_well(browser, server, shots, doc, width):
    shot = shots / f"{doc.replace('/', '__')}-{width}.png"
    report = pagecheck.check_page(browser, server, doc, width, screenshot=shot)
    _links.update(report.links)
    assert not report.problems, f"{doc} at {width} px:\n  " + "\n  ".join(report.problems)


def test_every_local_link_answers(server):
    assert _links, "no links were collected: run the page tests first (same module)"
    bad = pagecheck.broken_links(_links)
    assert not bad, f"local links that do not answer 200: {bad[:10]}"


def test_theorem_boxes_are_numbered(browser, server, site):
    with_boxes = [d for d in toc_files() if 'class="proof' in (site.html / f"{d}.html").read_text("utf-8")]
    assert with_boxes, "no page of the book has a theorem-like box"
    report = pagecheck.check_page(browser, server, with_boxes[0], pagecheck.DESKTOP)
    assert not report.problems


def _download_menu(browser, server, doc) -> dict[str, str]:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{server}/{doc}.html", wait_until="load")
        links = page.locator(".dropdown-download-buttons a")
        return {links.nth(i).inner_text().strip(): links.nth(i).get_attribute("href")
                for i in range(links.count())}
    finally:
        context.close()


def _fetch(server, doc, href) -> bytes:
    url = urllib.request.urljoin(f"{server}/{doc}.html", href)
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200, url
        return response.read()


def test_chapters_download_as_markdown_notebook_and_source_archive(browser, server, site):
    import nbformat

    doc = "book/setting"
    menu = _download_menu(browser, server, doc)
    assert {".md", ".ipynb", "source (.zip)", "book (.pdf)"} <= set(menu), f"download menu of {doc}: {menu}"
    assert _fetch(server, doc, menu["book (.pdf)"]).startswith(b"%PDF-"), "the menu's PDF is not a PDF"
    md = _fetch(server, doc, menu[".md"]).decode("utf-8")
    assert md == (ROOT / f"{doc}.md").read_text(encoding="utf-8"), "the .md download is not the chapter's source"
    notebook = nbformat.reads(_fetch(server, doc, menu[".ipynb"]).decode("utf-8"), as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and not any(c.get("outputs") for c in code), "the notebook must open clean, without outputs"
    archive = zipfile.ZipFile(io.BytesIO(_fetch(server, doc, menu["source (.zip)"])))
    names = set(archive.namelist())
    for needed in ("memcap-textbook/memcap/__init__.py", "memcap-textbook/book/setting.md",
                   "memcap-textbook/requirements.txt", "memcap-textbook/requirements-models.txt",
                   "memcap-textbook/_toc.yml"):
        assert needed in names, f"{needed} missing from the source archive"


def test_solution_dropdown_opens(browser, server, shots, site):
    with_solutions = [d for d in toc_files() if "solution dropdown" in (site.html / f"{d}.html").read_text("utf-8")]
    assert with_solutions, "no page of the book has a solution dropdown"
    context = browser.new_context(viewport={"width": pagecheck.DESKTOP, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{server}/{with_solutions[0]}.html", wait_until="load")
        solution = page.locator("div.solution.dropdown").first
        body = solution.locator("section").first
        assert not body.is_visible(), "a solution is visible before the reader opens it"
        solution.locator("button.toggle-button, p.admonition-title").first.click()
        body.wait_for(state="visible", timeout=5000)
        assert body.is_visible()
        solution.screenshot(path=str(shots / "solution-open.png"))
    finally:
        context.close()


def test_search_snippets_show_no_tex_source(browser, server):
    """Search results quote page text; math in them is written as plain text, not TeX source."""
    context = browser.new_context(viewport={"width": pagecheck.DESKTOP, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{server}/search.html?q=heads", wait_until="load")
        page.wait_for_function("document.querySelector('#search-results p.search-summary, "
                               "#search-results .context') !== null", timeout=20_000)
        page.wait_for_timeout(1000)  # every summary is fetched on its own
        text = page.locator("#search-results").inner_text()
        assert "heads" in text.lower()
        assert "\\(" not in text and "\\)" not in text, f"TeX source in search snippets: {text[:400]}"
    finally:
        context.close()


def test_a_number_broken_over_two_lines_in_a_table_cell_is_found(browser):
    """The check behind "table cells break numbers": a narrow cell breaks '10 000' at its space and '300–600'
    at its dash; the same numbers joined with no-break characters (grid_tables.number, span) are not broken."""
    from memcap.experiments.grid_tables import number, span

    cells = ["10 000–130 000 → 300–600", f"{span(10_000, 130_000)} → {span(300, 600)}", number(1_234_567)]
    page = browser.new_page(viewport={"width": pagecheck.PHONE, "height": 600})
    try:
        page.set_content('<article class="bd-article" style="width: 200px"><table><tr>'
                         + "".join(f'<td style="width: 60px">{c}</td>' for c in cells) + "</tr></table></article>")
        assert page.evaluate(pagecheck._MEASURE)["broken"] == ["10 000–130 000", "300–600"]
    finally:
        page.close()


def test_punctuation_wrapped_apart_from_its_formula_is_found(browser):
    """The check behind "punctuation wraps apart from its formula": in columns 100 to 200 px wide, a
    formula box (display inline-block, as MathJax draws inline math) followed by "." and preceded by "("
    leaves one of them alone on a line at some width; grouped in a span.memcap-nowrap (as
    memcap.textbook.site groups them, with memcap.css), never."""
    formula = '<span class="math"><mjx-container style="display: inline-block; width: 40px">x</mjx-container></span>'
    found = {}
    page = browser.new_page(viewport={"width": pagecheck.DESKTOP, "height": 600})
    try:
        for grouped in (False, True):
            glued = f'({formula}).' if not grouped else f'<span class="memcap-nowrap">({formula}).</span>'
            page.set_content('<style>span.memcap-nowrap { white-space: nowrap; }</style>'
                             '<article class="bd-article" style="font: 16px serif">'
                             + "".join(f'<p style="width: {w}px">aaaa bbbb cccc {glued} next</p>'
                                       for w in range(100, 200, 2)) + "</article>")
            found[grouped] = page.evaluate(pagecheck._MEASURE)
    finally:
        page.close()
    assert found[False]["stranded"] and found[True]["stranded"] == [], found


def test_tiny_and_silently_scrolling_formulas_are_found(browser):
    """The checks behind "formula shrunk to" and "scrolls sideways with no faded edge": a formula at 70 % of
    its paragraph's type is reported, one at 85 % is not; a formula box (or a table's container) that
    scrolls sideways is reported unless memcap.js has marked the edge with more beyond it."""
    wide = '<span style="display: inline-block; width: 600px">x</span>'
    page = browser.new_page(viewport={"width": pagecheck.PHONE, "height": 600})
    try:
        page.set_content('<article class="bd-article" style="font: 16px serif; width: 300px">'
                         '<p><mjx-container style="font-size: 70%">small</mjx-container> '
                         '<mjx-container style="font-size: 85%">readable</mjx-container></p>'
                         + "".join(f'<p><mjx-container class="{c}" style="display: block; overflow-x: auto">'
                                   f'{text}{wide}</mjx-container></p>'
                                   for c, text in (("", "silent"), ("memcap-more-right", "marked")))
                         + '<div class="pst-scrollable-table-container" style="overflow-x: auto"><table><tr>'
                           f'<td>wide table{wide}</td></tr></table></div></article>')
        m = page.evaluate(pagecheck._MEASURE)
    finally:
        page.close()
    assert [text for _, text in m["tiny"]] == ["small"], m["tiny"]
    assert m["unmarked"] == ["silentx", "table: wide tablex"], m["unmarked"]


def test_a_figure_wider_than_the_column_is_found(browser):
    """The check behind "figure wider than the screen": at phone width, a figure kept wider than the column
    (scrolling sideways in its box, or spilling over the column) is reported; one that fits, as the phone
    drawings of memcap.textbook.phone_figures do, is not."""
    from urllib.parse import quote

    def drawing(width):
        return "data:image/svg+xml," + quote(f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='120'>"
                                             f"<rect width='{width}' height='120' fill='teal'/></svg>")

    figures = {"scrolls": ('style="overflow-x: auto"', 'style="min-width: 460px"', 688),
               "spills": ("", 'style="max-width: none"', 688),
               "fits": ("", 'style="max-width: 100%; height: auto"', 396)}
    page = browser.new_page(viewport={"width": pagecheck.PHONE, "height": 600})
    try:
        page.set_content('<body style="margin: 0"><article class="bd-article" style="padding: 0 16px">'
                         + "".join(f'<figure {box} style="margin: 0"><img alt="{name}" src="{drawing(w)}" {img}>'
                                   f'<figcaption><span class="caption-number">Fig. {k} </span>{name}</figcaption>'
                                   f'</figure>' for k, (name, (box, img, w)) in enumerate(figures.items(), 1))
                         + "</article></body>")
        images = {img["alt"]: img for img in page.evaluate(pagecheck._MEASURE)["images"]}
        found = {name: pagecheck._too_wide(name, img, pagecheck.PHONE) for name, img in images.items()}
        assert any("scrolls sideways in its figure" in p for p in found["scrolls"]), found["scrolls"]
        assert any("sticks out of the text column" in p for p in found["spills"]), found["spills"]
        assert any("wider than the screen" in p for p in found["spills"]), found["spills"]
        assert found["fits"] == [], found["fits"]
        assert images["fits"]["natural"] == 396 and images["fits"]["shown"] == pagecheck.PHONE - 32
    finally:
        page.close()

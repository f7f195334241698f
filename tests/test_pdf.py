"""The PDF editions (``python -m memcap pdf``, :mod:`memcap.textbook.pdf`), read back with PDFium (pypdfium2).

For the full book and the student edition: every chapter's title and every numbered result's label as the
site shows it ("Theorem 5.1", "Fig. 11.2", "(4.3)", "Exercise 7.2") is in the PDF's text, so the numbering is
the site's; every figure is drawn (vector paths or an image on its caption's page or the one before); no
text or drawing passes the side margins (positions read from the PDF); the pages are numbered; the student
edition has no solution. The parsing helpers are checked on their own, without a build.
"""
from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import toc_files

LABEL = re.compile(r"^((?:Definition|Assumption|Theorem|Proposition|Lemma|Corollary|Remark|Claim|Conjecture|Example"
                   r"|Exercise|Fig\.|Table) \d+\.\d+|\(\d+\.\d+\))")
"""The numbered label at the start of a box title, a caption or an equation number."""
MARGIN_SLACK_PT = 1.5
"""How far (in points) a glyph's box may reach into a side margin: antialiasing and italic overhang."""


def squeeze(text: str) -> str:
    """``text`` without any white space (line breaks, no-break and thin spaces, word joiners): the PDF's text
    breaks lines where the page did."""
    return re.sub(r"[\s\u00a0\u2009\u202f\u2060\u200b]+", "", text)


def _plain(fragment: str) -> str:
    return html_lib.unescape(re.sub(r"<[^>]+>", "", fragment))


def title_words(page_html: str) -> list[str]:
    """The text of the page's first ``<h1>`` without its math (typeset by MathJax, whose glyphs do not read back
    as TeX) and without the heading's link mark: the runs of words the PDF must hold."""
    match = re.search(r"<h1[^>]*>(.*?)</h1>", page_html, re.DOTALL)
    if not match:
        raise ValueError("the page has no <h1> title")
    head = re.sub(r'<a class="headerlink".*?</a>', "", match.group(1), flags=re.DOTALL)
    pieces = re.split(r'<span class="math[^"]*">.*?</span>', head, flags=re.DOTALL)
    return [p.strip() for p in (_plain(piece) for piece in pieces) if len(p.strip()) >= 2]


def numbered_labels(page_html: str, *, solutions: bool = True) -> list[str]:
    """The numbered labels a page shows, in order: theorem-like and exercise box titles, figure and table
    caption numbers and equation numbers (``solutions=False`` leaves out "Solution to ..." boxes, which name
    an exercise's label)."""
    found = []
    for _kind, inner in re.findall(r'<(p class="admonition-title"|span class="caption-number"|span class="eqno")'
                                  r'[^>]*>(.*?)</(?:p|span)>', page_html, re.DOTALL):
        text = " ".join(_plain(inner).split())
        if not solutions and text.startswith("Solution"):
            continue
        match = LABEL.match(text)
        if match:
            found.append(match.group(1))
    return found


@dataclass
class PdfPage:
    text: str
    width: float
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)   # text lines: l, b, r, t
    drawings: list[tuple[float, float, float, float]] = field(default_factory=list)  # paths and images
    images: int = 0


def read_pdf(path: Path) -> list[PdfPage]:
    """Each page of the PDF at ``path``: its text, the boxes of its text lines and of its drawn objects (points)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pages = []
    document = pdfium.PdfDocument(str(path))
    try:
        for page in document:
            text = page.get_textpage()
            read = PdfPage(text.get_text_range(), page.get_width())
            read.boxes = [text.get_rect(k) for k in range(text.count_rects())]
            for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_IMAGE], max_depth=8):
                box = obj.get_bounds()
                if box[3] - box[1] > page.get_height():
                    # taller than the page: the geometry of a box that Chromium fragments across pages (or a
                    # glyph outline it draws huge and clips), painted on every page it spans, clipped there;
                    # about 90 per edition. Its bounds say nothing of what this page shows, so not counted.
                    continue
                read.drawings.append(box)
                read.images += obj.type == raw.FPDF_PAGEOBJ_IMAGE
            pages.append(read)
    finally:
        document.close()
    return pages


def _side_margins_pt() -> tuple[float, float]:
    from memcap.textbook.pdf import PAGE

    margin = PAGE["margin"]
    return (float(margin["left"].removesuffix("mm")) / 25.4 * 72, float(margin["right"].removesuffix("mm")) / 25.4 * 72)


def past_margins(pages: list[PdfPage]) -> list[str]:
    """Every text line or drawing that passes a side margin, as "page K: ..." sentences."""
    left, right = _side_margins_pt()
    bad = []
    for k, page in enumerate(pages, start=1):
        for kind, boxes in (("text", page.boxes), ("drawing", page.drawings)):
            for box in boxes:
                lo, hi = box[0], box[2]
                if lo < left - MARGIN_SLACK_PT or hi > page.width - right + MARGIN_SLACK_PT:
                    bad.append(f"page {k}: {kind} from x = {lo:.0f} to {hi:.0f} pt (the margins are at {left:.0f}"
                               f" and {page.width - right:.0f} pt)")
    return bad


def missing_from(pages: list[PdfPage], site_html: Path, *, solutions: bool) -> list[str]:
    """What the site at ``site_html`` shows that the PDF lacks: chapter titles and numbered labels."""
    whole = squeeze("".join(page.text for page in pages))
    missing = []
    for doc in toc_files():
        source = (site_html / f"{doc}.html").read_text(encoding="utf-8")
        for words in title_words(source):
            if squeeze(words) not in whole:
                missing.append(f"{doc}: title words {words!r}")
        for label in numbered_labels(source, solutions=solutions):
            if squeeze(label) not in whole:
                missing.append(f"{doc}: {label}")
    return missing


def undrawn_figures(pages: list[PdfPage], site_html: Path) -> list[str]:
    """The figures of the site whose caption's page (and the page before it) holds fewer than 20 drawn objects
    (a figure's axes, ticks and curves are paths; an embedded bitmap is an image)."""
    numbers = [label for doc in toc_files()
               for label in numbered_labels((site_html / f"{doc}.html").read_text(encoding="utf-8"))
               if label.startswith("Fig.")]
    texts = [squeeze(page.text) for page in pages]
    bad = []
    for label in numbers:
        # the caption itself: its label followed by more words, the first page that has it so
        at = [k for k, text in enumerate(texts) if squeeze(label) in text]
        if not at:
            bad.append(f"{label}: caption not found")
            continue
        drawn = any(len(pages[k].drawings) >= 20 or pages[k].images for k in at for k in (k, max(0, k - 1)))
        if not drawn:
            bad.append(f"{label}: no drawing on its caption's page or the one before")
    return bad


# --- the helpers on their own --------------------------------------------------------------------------

def test_labels_and_titles_are_read_from_a_page():
    page = ('<h1>Theorem 1 for <span class="math notranslate nohighlight">\\(H\\)</span> heads'
            '<a class="headerlink" href="#x">#</a></h1>'
            '<p class="admonition-title">Theorem 5.1 (Mahdavi et al.)</p><p class="admonition-title">Proof</p>'
            '<span class="caption-number">Fig. 11.2 </span><span class="eqno">(4.3)<a class="headerlink">#</a></span>'
            '<p class="admonition-title">Solution to Exercise 5.2</p><p class="admonition-title">Exercise 5.2</p>')
    assert title_words(page) == ["Theorem 1 for", "heads"]
    assert numbered_labels(page) == ["Theorem 5.1", "Fig. 11.2", "(4.3)", "Exercise 5.2"]
    assert numbered_labels(page, solutions=False) == ["Theorem 5.1", "Fig. 11.2", "(4.3)", "Exercise 5.2"]
    assert squeeze("Fig.\u00a011.2\r\n(4.3)") == "Fig.11.2(4.3)"
    with pytest.raises(ValueError, match="no <h1>"):
        title_words("<p>no title</p>")


def test_a_line_past_the_margin_is_found():
    left, right = _side_margins_pt()
    inside = PdfPage("a", 595.0, boxes=[(left, 100, 595.0 - right, 110)], drawings=[(left + 5, 0, 300, 50)])
    outside = PdfPage("b", 595.0, boxes=[(left, 100, 595.0 - right + 20, 110)], drawings=[(left - 30, 0, 300, 50)])
    assert past_margins([inside]) == []
    found = past_margins([inside, outside])
    assert len(found) == 2 and all(line.startswith("page 2:") for line in found)


# --- the built PDFs --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def book_pages(site_pdf) -> list[PdfPage]:
    return read_pdf(site_pdf)


@pytest.fixture(scope="module")
def student_pages(student_site) -> list[PdfPage]:
    from memcap.textbook.pdf import PDF_NAME

    path = student_site / PDF_NAME
    assert path.is_file(), f"the student edition was built without its PDF ({path})"
    return read_pdf(path)


@pytest.mark.slow
@pytest.mark.browser
def test_book_pdf_holds_every_title_and_numbered_label(book_pages, site):
    missing = missing_from(book_pages, site.html, solutions=True)
    assert not missing, f"{len(missing)} things the site shows are missing from the PDF: {missing[:15]}"


@pytest.mark.slow
@pytest.mark.browser
def test_student_pdf_holds_every_title_and_label_and_no_solution(student_pages, student_site):
    missing = missing_from(student_pages, student_site, solutions=False)
    assert not missing, f"{len(missing)} things the student site shows are missing from its PDF: {missing[:15]}"
    assert "Solution to Exercise" not in "".join(p.text for p in student_pages)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("edition", ["book", "student"])
def test_pdf_draws_every_figure_and_keeps_inside_the_margins(edition, request, site, student_site):
    pages = request.getfixturevalue(f"{edition}_pages")
    html = site.html if edition == "book" else student_site
    assert not undrawn_figures(pages, html)
    bad = past_margins(pages)
    assert not bad, f"{len(bad)} lines or drawings pass the side margins: {bad[:10]}"


@pytest.mark.slow
@pytest.mark.browser
def test_book_pdf_pages_are_numbered_and_solutions_open(book_pages):
    total = len(book_pages)
    assert total > 50, f"the PDF has only {total} pages"
    for k in (0, total // 2, total - 1):
        assert re.search(rf"\b{k + 1}\s*/\s*{total}\b", book_pages[k].text), f"page {k + 1} has no 'k / N' number"
    assert "Solution to Exercise" in "".join(p.text for p in book_pages), "the full edition's solutions are missing"


def test_bad_arguments_are_refused_by_name(tmp_path):
    from memcap.textbook.pdf import build_pdf, print_pdf

    with pytest.raises(ValueError, match="html must be the folder of a singlehtml build"):
        print_pdf(tmp_path, tmp_path / "x.pdf")
    (tmp_path / "index.html").write_text("<html></html>")
    with pytest.raises(ValueError, match="timeout_s must be a positive number"):
        print_pdf(tmp_path, tmp_path / "x.pdf", timeout_s=0)
    with pytest.raises(ValueError, match="target must be a .pdf file"):
        print_pdf(tmp_path, tmp_path / "x.html")
    with pytest.raises(ValueError, match="root must be the book's folder"):
        build_pdf(tmp_path, tmp_path)
    from tests.conftest import ROOT
    with pytest.raises(ValueError, match="build must hold an HTML build of the book"):
        build_pdf(ROOT, tmp_path)

"""What a reader would notice on a page, checked in a real browser (Debian's Chromium via Playwright).

Used by ``tests/test_browser.py`` (every page of the strict build, at desktop and phone width) and by
``python -m tests.preview`` (a few chapters built quickly while writing). Each check returns the list of
problems it found, as sentences a chapter author can act on; an empty list means the page is fine.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memcap.textbook.pdf import CHROMIUM_FLAGS, PDF_NAME, chromium_path, serve  # noqa: F401  (the PDF editions use them too)

DESKTOP, PHONE = 1280, 390
# A console error the book theme logs on every page; it does not affect the page.
KNOWN_CONSOLE_NOISE = ("invalid theme mode",)
BOX_TITLE = re.compile(r"^(Definition|Assumption|Theorem|Proposition|Lemma|Corollary|Remark|Claim|Conjecture)"
                       r" \d+\.\d+")
MIN_MATH_SCALE = 0.85
"""memcap.js shrinks a formula too wide for its column to no less than this share of its text's size."""
WIDE_OK = "wide-ok"
"""Class of an element (or an ancestor) that may scroll sideways on purpose, e.g. a very wide table."""

MISSING_CHROMIUM = ("the browser checks need Debian's Chromium, which is not installed: `sudo apt-get install "
                    "chromium` (.ci/run installs it)")


@contextmanager
def chromium():
    """A headless Chromium (Playwright's driver, Debian's browser: nothing is downloaded)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        path = chromium_path()
        if path is None:
            raise RuntimeError(MISSING_CHROMIUM)
        browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


# Everything is measured in the page by one script, so that a page costs one round trip.
_MEASURE = r"""() => {
  const art = document.querySelector('article.bd-article');
  if (!art) return {missing: true};
  const artRect = art.getBoundingClientRect();
  const wideOk = el => !!el.closest('.WIDE_OK');
  const short = t => (t || '').replace(/\s+/g, ' ').trim().slice(0, 70);

  // raw TeX: the text of the article, hidden parts (collapsed solutions) included, without code and math
  const copy = art.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, mjx-container, .highlight, .MathJax, mjx-assistive-mml')
      .forEach(e => e.remove());
  const text = copy.textContent;
  const raw = [];
  const re = /\$|\\\(|\\\)|\\\[|\\\]|\\[A-Za-z]+/g;
  let m;
  while ((m = re.exec(text)) !== null && raw.length < 5) {
    raw.push(short(text.slice(Math.max(0, m.index - 30), m.index + 30)));
  }

  // boxes wider than their content allows
  const overflow = [];
  const candidates = art.querySelectorAll(
      'mjx-container[display="true"], div.math, div.highlight pre, div.cell_output pre, ' +
      'div.cell_output, div.output pre, table');
  for (const el of candidates) {
    if (wideOk(el)) continue;
    const box = el.tagName === 'TABLE' ? el.parentElement : el;
    if (box.scrollWidth > box.clientWidth + 1) {
      overflow.push([el.tagName.toLowerCase(), box.scrollWidth, box.clientWidth, short(el.textContent)]);
    }
  }
  const shrunk = [...art.querySelectorAll('mjx-container.memcap-shrunk')].map(e => short(e.textContent));
  // formulas shrunk below MIN_MATH_SCALE of their paragraph's type (hard to read on a phone), and formulas
  // that scroll sideways with no faded edge to say so (a phone hides scrollbars until touched)
  const tiny = [], unmarked = [];
  for (const el of art.querySelectorAll('mjx-container')) {
    if (el.getBoundingClientRect().width === 0 || wideOk(el)) continue;
    const own = parseFloat(getComputedStyle(el).fontSize);
    const around = parseFloat(getComputedStyle(el.parentElement).fontSize);
    if (own < MIN_MATH_SCALE * around - 0.05) tiny.push([Math.round(100 * own / around), short(el.textContent)]);
    const scrolls = /auto|scroll/.test(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth + 1;
    if (scrolls && !el.classList.contains('memcap-more-right') && !el.classList.contains('memcap-more-left')) {
      unmarked.push(short(el.textContent));
    }
  }
  for (const el of art.querySelectorAll('.pst-scrollable-table-container')) {
    if (el.scrollWidth > el.clientWidth + 1 && !wideOk(el) && !el.classList.contains('memcap-more-right')
        && !el.classList.contains('memcap-more-left')) unmarked.push('table: ' + short(el.textContent));
  }

  // math a box cuts off: a formula (inline or display) whose ends pass the edges of the nearest ancestor
  // that clips (overflow hidden or clip) before any ancestor that scrolls. Collapsed parts are skipped.
  const hidden = [];
  for (const el of art.querySelectorAll('mjx-container')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || wideOk(el)) continue;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const x = getComputedStyle(a).overflowX;
      if (x === 'auto' || x === 'scroll') break;
      if (x === 'hidden' || x === 'clip') {
        const box = a.getBoundingClientRect();
        if (r.right > box.right + 1 || r.left < box.left - 1) {
          hidden.push([a.tagName.toLowerCase() + '.' + [...a.classList].slice(0, 2).join('.'),
                       Math.round(r.right - box.right), short(el.textContent)]);
        }
        break;
      }
    }
  }

  // figures: the drawing the browser chose (currentSrc: a <picture> offers phones their own) and how it
  // sits in the article's text column (inside its padding) and in the screen; a figure, or the box holding
  // it, that scrolls sideways hides part of it
  const artStyle = getComputedStyle(art);
  const columnLeft = artRect.left + parseFloat(artStyle.paddingLeft);
  const columnRight = artRect.right - parseFloat(artStyle.paddingRight);
  const images = [...art.querySelectorAll('img')].map(img => {
    const fig = img.closest('figure');
    const number = fig ? fig.querySelector('figcaption .caption-number') : null;
    const r = img.getBoundingClientRect();
    const scrolls = [fig, fig && fig.parentElement].filter(box => {
      if (!box || box.scrollWidth <= box.clientWidth + 1) return false;
      const b = box.getBoundingClientRect();   // the parent box counts where the image is what sticks out
      return box === fig || r.right > b.right + 1 || r.left < b.left - 1;
    }).map(box => [box.tagName.toLowerCase(), box.scrollWidth, box.clientWidth]);
    return {src: img.currentSrc || img.src, alt: img.alt, loaded: img.complete && img.naturalWidth > 0,
            natural: img.naturalWidth, shown: img.clientWidth, wide: wideOk(img),
            right: r.right - columnRight, left: r.left - columnLeft, screenLeft: r.left,
            screenRight: r.right - document.documentElement.clientWidth, scrolls,
            numbered: !!number, caption: fig ? short(fig.querySelector('figcaption')?.textContent) : ''};
  });

  // numbers that a table cell breaks over two lines ("10 000" or "300–600" split at its space or dash);
  // math is typeset by MathJax, which does not break inside inline math, so only text is read
  const broken = [];
  const group = '\\d+(?:[ ,\\u00a0\\u2009\\u202f]\\d{3})*(?:\\.\\d+)?';
  const numberRe = new RegExp(`${group}(?:[\u2013-]\u2060?${group})?`, 'g');
  for (const cell of art.querySelectorAll('td, th')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT, {acceptNode: n =>
        n.parentElement.closest('mjx-container') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
    for (let node = walker.nextNode(); node && broken.length < 5; node = walker.nextNode()) {
      for (const hit of node.data.matchAll(numberRe)) {
        if (/^\d+$/.test(hit[0])) continue;   // a run of digits never breaks
        const range = document.createRange();
        range.setStart(node, hit.index);
        range.setEnd(node, hit.index + hit[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.bottom)));
        if (lines.size > 1) broken.push(hit[0].replace(/[\u00a0\u2009\u202f\u2060]/g, ' '));
      }
    }
  }

  // punctuation set apart from its formula: a line that starts with the "." or "," after inline math, or
  // ends with the "(" before it (browsers may break on either side of MathJax's box where the text has no
  // space; memcap.textbook.site groups them). Formulas wider than their column are left out.
  const stranded = [];
  for (const eq of art.querySelectorAll('mjx-container:not([display="true"])')) {
    if (stranded.length >= 5) break;
    const host = eq.parentElement && eq.parentElement.matches('span.math') ? eq.parentElement : eq;
    const r = eq.getBoundingClientRect();
    if (r.width === 0 || (host.parentElement.style.whiteSpace === 'normal')) continue;
    for (const [node, at] of [[host.nextSibling, 0], [host.previousSibling, -1]]) {
      if (!node || node.nodeType !== Node.TEXT_NODE || !node.data.length) continue;
      const k = at === 0 ? 0 : node.data.length - 1;
      if (/\s/.test(node.data[k])) continue;
      const range = document.createRange();
      range.setStart(node, k);
      range.setEnd(node, k + 1);
      const c = range.getBoundingClientRect();
      if (c.width > 0 && (c.top >= r.bottom - 1 || c.bottom <= r.top + 1)) {
        stranded.push(short((at === 0 ? '' : node.data[k]) + eq.textContent + (at === 0 ? node.data[k] : '')));
      }
    }
  }

  // ids
  const counts = {};
  document.querySelectorAll('[id]').forEach(e => { counts[e.id] = (counts[e.id] || 0) + 1; });
  const duplicates = Object.keys(counts).filter(k => counts[k] > 1);

  const titles = [...document.querySelectorAll('div.proof:not(.admonition-proof) > p.admonition-title')]
      .map(t => t.innerText.trim());
  // every local link, the student edition's included (test_every_local_link_answers)
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href)
      .filter(h => h.startsWith(location.origin));
  // glued text set apart from its sentence (bold where the sentence is not)
  const loud = [...art.querySelectorAll('span.pasted-text')].filter(e =>
      Number(getComputedStyle(e).fontWeight) > Number(getComputedStyle(e.parentElement).fontWeight))
      .map(e => short(e.textContent)).slice(0, 3);
  return {raw, overflow, shrunk, tiny, unmarked, hidden, loud, broken, stranded, images, duplicates, titles, links,
          hasMath: !!art.querySelector('span.math, div.math'),
          typeset: art.querySelectorAll('mjx-container').length,
          figureAsText: art.innerText.includes('<Figure size'),
          pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth};
}""".replace("WIDE_OK", WIDE_OK).replace("MIN_MATH_SCALE", str(MIN_MATH_SCALE))


@dataclass
class PageReport:
    doc: str
    width: int
    problems: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def check_page(browser, base: str, doc: str, width: int, screenshot: Path | None = None,
               full_page: bool = False, parts: bool = False) -> PageReport:
    """Open ``doc`` (e.g. ``book/setting``) at ``width`` px and list what a reader would notice.

    ``screenshot``: save the top of the page (the whole page with ``full_page``) there; with ``parts``,
    also every figure and every theorem-like box as ``<screenshot stem>-fig<k>.png`` / ``-box<k>.png``,
    small enough to look at one by one.
    """
    report = PageReport(doc, width)
    problems = report.problems
    context = browser.new_context(viewport={"width": width, "height": 900})
    blocked: list[str] = []
    errors: list[str] = []
    failed: list[str] = []

    def block(route):
        if not route.request.url.startswith("data:"):
            blocked.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(?!http://127\.0\.0\.1).*"), block)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # memcap.js asks (HEAD) whether the book's PDF was made, to drop the menu entry when it was not: that
    # answer is not a failure (test_chapters_download_as_... checks that the suite's site has the PDF)
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}")
            if r.status >= 400 and not (r.request.method == "HEAD" and r.url.endswith(PDF_NAME)) else None)
    try:
        page.goto(f"{base}/{doc}.html", wait_until="load")
        if page.locator("script[src*='mathjax']").count():
            page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.evaluate("MathJax.startup.promise")
        page.wait_for_function("document.documentElement.dataset.memcapFitted === '1'", timeout=10_000)
        m = page.evaluate(_MEASURE)
        if m.get("missing"):
            problems.append("no article element: not a book page")
            return report
        report.links = m["links"]
        if m["raw"]:
            problems.append(f"raw TeX or $ left in the text (collapsed parts included): {m['raw']}")
        if m["hasMath"] and not m["typeset"]:
            problems.append("the page has math but MathJax typeset nothing")
        if m["figureAsText"]:
            problems.append("a figure was printed as text ('<Figure size ...>') instead of drawn")
        for title in m["titles"]:
            if not title.startswith("Proof") and not BOX_TITLE.match(title):
                problems.append(f"theorem-like box without a number: {title!r}")
        if m["duplicates"]:
            problems.append(f"duplicated id attributes: {m['duplicates'][:8]}")
        for img in m["images"]:
            name = img["src"].rsplit("/", 1)[-1][:24]
            if not img["loaded"]:
                problems.append(f"image {name} did not load")
                continue
            if not img["numbered"]:
                problems.append(f"image {name} is not a numbered, captioned figure (use glue:figure with :name:)")
            if not img["alt"] or re.search(r"\.(png|jpe?g|svg)$|_images/|^\.\./", img["alt"]):
                problems.append(f"image {name} has no alt text or a file path as alt text: {img['alt']!r}")
            if not img["src"].endswith(".svg") and img["natural"] < 2 * img["shown"]:
                problems.append(f"figure {name} is a raster image with fewer than 2 pixels per pixel shown "
                                f"({img['natural']} for {img['shown']}): soft on high-density screens (serve SVG)")
            small = _smallest_text_px(base, doc, img)
            if small is not None and small < MIN_FIGURE_TEXT_PX:
                problems.append(f"figure {name} shows its smallest text at {small:.1f} px at {width} px "
                                f"(< {MIN_FIGURE_TEXT_PX}): {img['caption'][:40]}")
            if not img["wide"]:
                problems.extend(_too_wide(name, img, width))
            if width == DESKTOP:
                if img["shown"] < 0.9 * img["natural"]:
                    problems.append(f"figure {name} is shown at {img['shown']} of its {img['natural']} px "
                                    f"(< 90 %): draw it with memcap.plotting's width ({img['caption'][:40]})")
        if width == DESKTOP:
            for tag, need, have, text in m["overflow"]:
                problems.append(f"{tag} is wider than its box ({need} > {have} px): {text!r}")
            for text in m["shrunk"]:
                problems.append(f"display equation too wide for the desktop column (break it): {text!r}")
        if m["loud"]:
            problems.append(f"glued text bolder than its sentence: {m['loud']}")
        if m["broken"]:
            problems.append(f"table cells break numbers over two lines (join them with no-break spaces, "
                            f"memcap.experiments.grid_tables.number and span): {m['broken']}")
        if m["stranded"]:
            problems.append(f"punctuation wraps apart from its formula (a line starts with the '.' after inline "
                            f"math or ends with the '(' before it): {m['stranded']}")
        for scale, text in m["tiny"][:5]:
            problems.append(f"formula shrunk to {scale} % of its text (< {100 * MIN_MATH_SCALE:.0f} %, hard to "
                            f"read; memcap.js's MIN_SCALE): {text!r}")
        for text in m["unmarked"][:5]:
            problems.append(f"formula or table scrolls sideways with no faded edge to show it (memcap.js markEdges): "
                            f"{text!r}")
        for box, cut, text in m["hidden"]:
            problems.append(f"math cut off by a box that hides overflow ({box}, {cut} px lost): {text!r}")
        if m["pageWidth"] > m["viewport"] + 1:
            problems.append(f"the page scrolls sideways at {width} px ({m['pageWidth']} px wide)")
        if blocked:
            problems.append(f"requests left the machine: {blocked[:5]}")
        if failed:
            problems.append(f"requests failed: {failed[:5]}")
        real_errors = [e for e in errors if not any(n in e for n in KNOWN_CONSOLE_NOISE)]
        if real_errors:
            problems.append(f"JavaScript errors: {real_errors[:3]}")
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=full_page)
            if parts:
                stem = screenshot.with_suffix("")
                for kind, selector in (("fig", "article figure"), ("box", "article div.proof")):
                    items = page.locator(selector)
                    for k in range(items.count()):
                        items.nth(k).screenshot(path=f"{stem}-{kind}{k + 1}.png")
    finally:
        context.close()
    return report


def _too_wide(name: str, img: dict, width: int) -> list[str]:
    """What makes the figure ``img`` (measured by ``_MEASURE``) wider than the screen or the text column at
    ``width`` px: its edges past the column's or the screen's, or its box scrolling sideways."""
    found = []
    if img["right"] > 1 or img["left"] < -1:
        past = max(img["right"], -img["left"])
        found.append(f"figure {name} sticks out of the text column by {past:.0f} px at {width} px "
                     f"({img['caption'][:40]})")
    if img["screenLeft"] < 0 or img["screenRight"] > 1:
        past = max(img["screenRight"], -img["screenLeft"])
        found.append(f"figure {name} is wider than the screen at {width} px ({past:.0f} px off it)")
    for tag, need, have in img["scrolls"]:
        found.append(f"figure {name} scrolls sideways in its {tag} at {width} px ({need} > {have} px): "
                     f"part of it is off screen ({img['caption'][:40]})")
    return found


MIN_FIGURE_TEXT_PX = 9
"""The smallest text a figure may show, in CSS pixels, at either width."""
_FONT_MARK = re.compile(r'<!-- memcap-figure min-font-px="([0-9.]+)" -->')


def _smallest_text_px(base: str, doc: str, img: dict) -> float | None:
    """The smallest text of an SVG figure as shown: the size marked by memcap.textbook.page.figure_svg in the
    drawing the browser chose (``currentSrc``: the phone drawing on a phone), scaled by shown / natural width.
    None for an image without the mark (a raster image)."""
    import urllib.parse
    import urllib.request

    url = urllib.parse.urljoin(f"{base}/{doc}.html", img["src"])
    if not url.endswith(".svg") or not img["natural"]:
        return None
    with urllib.request.urlopen(url) as answer:  # noqa: S310  (the local test server)
        found = _FONT_MARK.search(answer.read().decode("utf-8", "replace"))
    return float(found.group(1)) * img["shown"] / img["natural"] if found else None


def broken_links(links: set[str]) -> list[str]:
    """The local URLs among ``links`` that do not answer 200 (fragments ignored)."""
    import urllib.error
    import urllib.request

    bad = []
    for url in sorted({link.split("#", 1)[0] for link in links}):
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                if response.status != 200:
                    bad.append(f"{response.status} {url}")
        except urllib.error.HTTPError as err:
            bad.append(f"{err.code} {url}")
    return bad

"""The built site in a real browser (Debian's Chromium driven by Playwright; no browser download).

Checks what a reader would notice: math typeset by the locally served MathJax (no raw TeX left),
numbered theorem-like boxes, every image loaded, a solution dropdown that opens, and no request leaving
the machine. Screenshots of every page land in ``$MEMCAP_SCREENSHOTS`` (default: a temporary folder)
so a person can look at them.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.conftest import toc_files

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
# Two console errors the book theme logs on every page; they do not affect the page.
KNOWN_CONSOLE_NOISE = ("THEBE_JS_URL", "invalid theme mode")
BOX_TITLE = re.compile(r"^(Definition|Assumption|Theorem|Proposition|Lemma|Corollary|Remark|Claim) \d+\.\d+")


def chromium_path() -> str:
    """Debian's Chromium; installed with apt-get when missing and we may (root), else a clear failure."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        return shutil.which("chromium")
    pytest.fail("the browser tests need Debian's Chromium: run `sudo apt-get install chromium`")


@pytest.fixture(scope="module")
def server(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output readable
            pass

    handler = functools.partial(Quiet, directory=str(site.html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("MEMCAP_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Visit:
    """One page opened offline: requests to other hosts are blocked and recorded."""

    def __init__(self, browser, url: str):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.context.route(re.compile(r"^(?!http://127\.0\.0\.1).*"), self._block)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.goto(url, wait_until="load")
        self.has_mathjax = self.page.locator("script[src*='mathjax']").count() > 0
        if self.has_mathjax:  # Sphinx loads MathJax only on pages with math
            self.page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
            self.page.evaluate("MathJax.startup.promise")

    def _block(self, route):
        if not route.request.url.startswith("data:"):
            self.blocked.append(route.request.url)
        route.abort()

    def close(self):
        self.context.close()


@pytest.mark.parametrize("doc", toc_files())
def test_page_renders_offline(browser, server, shots, doc):
    visit = Visit(browser, f"{server}/{doc}.html")
    page = visit.page
    try:
        article = page.locator("article.bd-article")
        text = article.inner_text()
        assert not re.search(r"\\\(|\\\)|\\\[|\$\$", text), f"{doc}: raw TeX left after MathJax ran"
        if page.locator("span.math, div.math").count():
            assert visit.has_mathjax, f"{doc}: the page has math but loads no MathJax"
            assert page.locator("mjx-container").count() > 0, f"{doc}: MathJax typeset nothing"
        assert "<Figure size" not in text, f"{doc}: a figure was printed as text instead of drawn"
        broken = page.evaluate(
            "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
        assert not broken, f"{doc}: images that did not load: {broken}"
        for title in page.locator("div.proof:not(.admonition-proof) > p.admonition-title").all_inner_texts():
            if not title.startswith("Proof"):
                assert BOX_TITLE.match(title.strip()), f"{doc}: theorem-like box without a number: {title!r}"
        assert not visit.blocked, f"{doc}: requests left the machine: {visit.blocked[:5]}"
        real_errors = [e for e in visit.errors if not any(n in e for n in KNOWN_CONSOLE_NOISE)]
        assert not real_errors, f"{doc}: JavaScript errors: {real_errors}"
        page.screenshot(path=str(shots / (doc.replace("/", "__") + ".png")), full_page=False)
    finally:
        visit.close()


def test_theorem_boxes_are_numbered(browser, server, site):
    with_boxes = [d for d in toc_files() if 'class="proof' in (site.html / f"{d}.html").read_text("utf-8")]
    assert with_boxes, "no page of the book has a theorem-like box"
    visit = Visit(browser, f"{server}/{with_boxes[0]}.html")
    try:
        titles = visit.page.locator("div.proof > p.admonition-title").all_inner_texts()
        numbered = [t for t in titles if BOX_TITLE.match(t.strip())]
        assert numbered, f"no numbered theorem-like box on {with_boxes[0]}: {titles}"
    finally:
        visit.close()


def test_solution_dropdown_opens(browser, server, shots, site):
    with_solutions = [d for d in toc_files() if "solution dropdown" in (site.html / f"{d}.html").read_text("utf-8")]
    assert with_solutions, "no page of the book has a solution dropdown"
    visit = Visit(browser, f"{server}/{with_solutions[0]}.html")
    page = visit.page
    try:
        solution = page.locator("div.solution.dropdown").first
        body = solution.locator("section").first
        assert not body.is_visible(), "a solution is visible before the reader opens it"
        solution.locator("button.toggle-button, p.admonition-title").first.click()
        body.wait_for(state="visible", timeout=5000)
        assert body.is_visible()
        solution.screenshot(path=str(shots / "solution-open.png"))
    finally:
        visit.close()

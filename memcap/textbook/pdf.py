"""The PDF editions: the whole book (or its student edition) as one A4 PDF, for print and offline reading.

How it is made. After the site's HTML build, Sphinx's ``singlehtml`` builder writes the whole book as one
page from the same executed doctrees (``_build/.doctrees``: no chapter runs again), and headless Chromium
(Playwright driving Debian's browser, as in the browser tests; nothing is downloaded) prints that page:
equations typeset by MathJax, figures as vector drawings (the SVGs of :func:`memcap.textbook.page.figure_svg`),
chapters, theorems, equations and figures numbered as on the site (the same Sphinx numbering), solutions
opened, code and outputs wrapped at the margin (the print rules of ``book/_static/memcap.css``), and page
numbers in the footer. No TeX installation is needed.

The one command is ``python -m memcap pdf`` (:func:`build_pdf` for the full edition, and
:func:`memcap.textbook.edition.build_student_edition` with ``pdf=True`` for the student edition); each
edition's PDF lands at the top of its HTML folder as :data:`PDF_NAME`, where every page's download menu
links it (:mod:`memcap.textbook.site`).
"""
from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

PDF_NAME = "memcap-textbook.pdf"
"""File name of an edition's PDF, at the top of its HTML folder (``_build/html/memcap-textbook.pdf``)."""

PAGE = {"format": "A4", "margin": {"top": "16mm", "bottom": "18mm", "left": "16mm", "right": "16mm"}}
"""Paper and margins of the PDF (Playwright's ``page.pdf`` arguments)."""
SCALE = 0.8
"""The page is laid out this much larger than the paper and scaled down: 16 CSS px text prints at 9.6 pt, and
the text column is as wide as the site's desktop column, which every equation, table and figure fits."""
A4_WIDTH_PX = 210 / 25.4 * 96
"""A4's width in CSS pixels (96 per inch)."""
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
_FOOTER = ('<div style="font-size: 8px; width: 100%; text-align: center; color: #555;">'
           '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


def chromium_path() -> str | None:
    """Debian's Chromium (``chromium`` or ``chromium-browser`` on ``PATH``), or None when it is missing."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on a free local port (MathJax's fonts load over HTTP, not from file:// URLs); yields the
    base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def _margin_px(value: str) -> float:
    return float(value.removesuffix("mm")) / 25.4 * 96


def layout_width() -> float:
    """The CSS width, in px, at which the page is laid out before it is scaled onto the paper."""
    margin = PAGE["margin"]
    return (A4_WIDTH_PX - _margin_px(margin["left"]) - _margin_px(margin["right"])) / SCALE


def _one_page(html: Path) -> str:
    """The page of a singlehtml build, relative to its folder: ``index.html``, or a copy at the top of the folder
    of the root document that Jupyter Book's ``index.html`` redirects to (``book/intro.html``): Sphinx writes
    that page's links as if it sat at the top (``_static/...``, ``_images/...``)."""
    import re

    index = (html / "index.html").read_text(encoding="utf-8", errors="replace")
    redirect = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', index)
    if not redirect or not (html / redirect.group(1)).is_file():
        return "index.html"
    shutil.copyfile(html / redirect.group(1), html / "memcap-print.html")
    return "memcap-print.html"


def print_pdf(html: str | Path, target: str | Path, *, timeout_s: float = 600) -> Path:
    """Print the one-page build in the folder ``html`` (its ``index.html``, or the page that redirects to) to
    the PDF file ``target``.

    Raises ``ValueError`` when ``html`` has no ``index.html`` or ``timeout_s`` is not a positive number, and
    ``RuntimeError`` when Chromium is missing or a script on the page fails.
    """
    html, target = Path(html), Path(target)
    if not (html / "index.html").is_file():
        raise ValueError(f"html must be the folder of a singlehtml build (with index.html), got {html}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    if target.suffix != ".pdf":
        raise ValueError(f"target must be a .pdf file, got {target}")
    path = chromium_path()
    if path is None:
        raise RuntimeError("the PDF is printed by Debian's Chromium, which is not installed: "
                           "`sudo apt-get install chromium`")
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with serve(html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": round(layout_width()), "height": 1200})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.emulate_media(media="print")
            page.set_default_timeout(timeout_s * 1000)
            page.goto(f"{base}/{_one_page(html)}", wait_until="load")
            if page.locator("script[src*='mathjax']").count():
                page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
                page.evaluate("MathJax.startup.promise")
            page.wait_for_function("document.documentElement.dataset.memcapFitted === '1'")
            real = [e for e in errors if "invalid theme mode" not in e]
            if real:
                raise RuntimeError(f"the one-page build raised JavaScript errors: {real[:3]}")
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            page.pdf(path=str(partial), scale=SCALE, print_background=True, display_header_footer=True,
                     header_template="<span></span>", footer_template=_FOOTER, outline=True, tagged=True,
                     **PAGE)
            partial.replace(target)
        finally:
            browser.close()
    return target


def build_pdf(root: str | Path, build: str | Path, *, target: str | Path | None = None) -> Path:
    """Make the PDF of the book at ``root`` whose HTML build is under ``build`` (the ``--path-output`` of
    ``jupyter-book build``: ``build/_build/html`` and ``build/_build/.doctrees``).

    Runs the strict ``singlehtml`` build into ``build/_build/singlehtml`` (from the HTML build's doctrees, so
    nothing is executed again) and prints it to ``target`` (default: ``build/_build/html/`` + :data:`PDF_NAME`).
    Raises ``ValueError`` when ``root`` is not the book's folder or ``build`` holds no HTML build, and
    ``RuntimeError`` (with the end of its log) when the one-page build fails.
    """
    root, build = Path(root).resolve(), Path(build).resolve()
    if not (root / "_toc.yml").is_file():
        raise ValueError(f"root must be the book's folder (with _toc.yml), got {root}")
    html = build / "_build" / "html"
    doctrees = build / "_build" / ".doctrees"
    if not (html / "index.html").is_file() or not doctrees.is_dir():
        raise ValueError(f"build must hold an HTML build of the book ({html}/index.html and {doctrees}): "
                         "build the site first (README: the build command)")
    jb = Path(sys.executable).with_name("jupyter-book")
    done = subprocess.run([str(jb), "build", str(root), "--path-output", str(build), "--builder", "singlehtml",
                           "-W", "-n", "--keep-going"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the one-page (singlehtml) build failed:\n{(done.stdout + done.stderr)[-4000:]}")
    return print_pdf(build / "_build" / "singlehtml", target or html / PDF_NAME)


__all__ = ["PDF_NAME", "PAGE", "SCALE", "build_pdf", "print_pdf", "layout_width", "chromium_path", "serve"]

"""Figures for phones: each figure of the site in two drawings, the one for narrow screens served by the browser.

A figure is drawn for the desktop column (6.25 in, 688 px); shown in a phone's column (342 px on a 390 px
screen) its text would shrink to 7 px. :func:`memcap.textbook.page.glue_figure` therefore draws each figure
twice, the second time laid out for a phone (:func:`memcap.textbook.page.stack_for_phone`: panels in one
column, 3.6 in wide), and myst-nb, which glues one image per figure, carries the phone drawing inside the
desktop SVG, in a comment (:func:`embed_phone_variant`).

This Sphinx extension (``setup``; loaded by :mod:`memcap.textbook.site`) finishes the job once an HTML build
(``html``, ``dirhtml``, ``singlehtml``) has written its pages: every ``<img>`` whose ``src`` is an SVG in
``_images`` that carries a phone drawing gets it written beside it (``NAME.phone.svg``), the copy is removed
from the desktop file, and the image is wrapped in ``<picture>`` with a ``<source>`` for screens at most
:data:`PHONE_MAX_WIDTH` px wide (:func:`rewrite_site`). The ``<img>`` itself is untouched (alt text, class, the
figure's caption and number around it): browsers that do not know ``<picture>`` show the desktop drawing,
printing (the PDF edition lays the page out 840 px wide) too. Running it again changes nothing.
"""
from __future__ import annotations

import base64
import html as html_lib
import re
import zlib
from pathlib import Path
from typing import Any

PHONE_MAX_WIDTH = 540
"""CSS px: screens at most this wide are shown the phone drawing (``book/_static/memcap.css`` uses the same
width for its phone rules)."""
PHONE_MEDIA = f"(max-width: {PHONE_MAX_WIDTH}px)"
"""The media query of the ``<source>`` that offers the phone drawing."""
PHONE_SUFFIX = ".phone.svg"
"""The phone drawing of ``_images/NAME.svg`` is written to ``_images/NAME.phone.svg``."""

_EMBEDDED = re.compile(r"<!-- memcap-phone-variant zlib-base64:([A-Za-z0-9+/=]*) -->")
_FIGURE_MARK = re.compile(r"<!-- memcap-figure min-font-px=\"[0-9.]+\" -->")
_IMG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_SRC = re.compile(r"""\ssrc\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_PICTURE_OPEN = re.compile(r"<picture\b[^>]*>\s*(?:<source\b[^>]*>\s*)*$", re.IGNORECASE)


def _check_svg(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be SVG text (str), got {type(value).__name__}")
    if "<svg" not in value:
        raise ValueError(f"{name} must be SVG text (with an <svg> element), got {value[:60]!r}")
    return value


def embed_phone_variant(svg: str, phone_svg: str) -> str:
    """``svg`` (a figure's desktop drawing, from :func:`memcap.textbook.page.figure_svg`) with ``phone_svg``
    carried inside it, compressed in a comment right after the figure's font mark (inside ``<svg>``, where
    IPython's SVG display keeps it). A drawing that already carries one is refused."""
    _check_svg(svg, "svg")
    _check_svg(phone_svg, "phone_svg")
    if _EMBEDDED.search(svg):
        raise ValueError("svg already carries a phone variant")
    if _EMBEDDED.search(phone_svg):
        raise ValueError("phone_svg must be a plain drawing, not one carrying a phone variant")
    mark = _FIGURE_MARK.search(svg)
    if mark is None:
        raise ValueError('svg must be marked by figure_svg (<!-- memcap-figure min-font-px="..." -->)')
    data = base64.b64encode(zlib.compress(phone_svg.encode("utf-8"), 9)).decode("ascii")
    comment = f"<!-- memcap-phone-variant zlib-base64:{data} -->"
    return svg[:mark.end()] + comment + svg[mark.end():]


def split_phone_variant(svg: str) -> tuple[str, str | None]:
    """``(desktop, phone)``: ``svg`` without its embedded phone drawing, and that drawing (None if it
    carries none, in which case ``desktop`` is ``svg`` unchanged)."""
    if not isinstance(svg, str):
        raise TypeError(f"svg must be SVG text (str), got {type(svg).__name__}")
    found = _EMBEDDED.search(svg)
    if found is None:
        return svg, None
    try:
        phone = zlib.decompress(base64.b64decode(found.group(1), validate=True)).decode("utf-8")
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"svg carries a damaged phone variant: {exc}") from None
    return svg[:found.start()] + svg[found.end():], phone


def _src(tag: str) -> str | None:
    found = _SRC.search(tag)
    return None if found is None else html_lib.unescape(found.group(1) if found.group(1) is not None
                                                         else found.group(2))


def rewrite_page(page: Path, images: Path) -> int:
    """Give every figure of the HTML file ``page`` whose image is an SVG in the folder ``images`` (the
    site's ``_images``) its phone drawing: write ``NAME.phone.svg`` from the copy the SVG carries, strip the
    copy, and wrap the ``<img>`` in a ``<picture>`` offering the phone drawing to screens matching
    :data:`PHONE_MEDIA`. Returns the number of images wrapped; an image already wrapped is left as it is."""
    for name, value in (("page", page), ("images", images)):
        if not isinstance(value, (str, Path)) or not str(value):
            raise TypeError(f"{name} must be a path (str or Path), got {value!r}")
    page, images = Path(page), Path(images)
    if not page.is_file() or page.suffix != ".html":
        raise ValueError(f"page must be an existing .html file, got {page}")
    if not images.is_dir():
        raise ValueError(f"images must be an existing folder (the site's _images), got {images}")
    text = page.read_text(encoding="utf-8")
    images = images.resolve()
    out, last, wrapped = [], 0, 0
    for match in _IMG.finditer(text):
        tag = match.group()
        src = _src(tag)
        if not src or "://" in src or src.startswith(("/", "data:")) or not src.endswith(".svg") \
                or src.endswith(PHONE_SUFFIX):
            continue
        target = (page.parent / src.split("#", 1)[0]).resolve()
        if target.parent != images or not target.is_file():
            continue
        phone = target.with_name(target.name[:-len(".svg")] + PHONE_SUFFIX)
        desktop, drawing = split_phone_variant(target.read_text(encoding="utf-8"))
        if drawing is not None:
            phone.write_text(drawing, encoding="utf-8")
            target.write_text(desktop, encoding="utf-8")
        if not phone.is_file() or _PICTURE_OPEN.search(text, max(0, match.start() - 2000), match.start()):
            continue   # no phone drawing, or wrapped already
        phone_src = src[:-len(".svg")] + PHONE_SUFFIX
        out.append(text[last:match.start()])
        out.append(f'<picture><source media="{PHONE_MEDIA}" srcset="{html_lib.escape(phone_src)}" '
                   f'type="image/svg+xml">{tag}</picture>')
        last = match.end()
        wrapped += 1
    if wrapped:
        out.append(text[last:])
        page.write_text("".join(out), encoding="utf-8")
    return wrapped


def rewrite_site(outdir: str | Path) -> int:
    """:func:`rewrite_page` for every ``.html`` file under the built site ``outdir`` (the folder holding
    ``_images``); returns the number of images wrapped. A site without ``_images`` has no figure: 0."""
    if not isinstance(outdir, (str, Path)) or not str(outdir):
        raise TypeError(f"outdir must be the built site's folder (str or Path), got {outdir!r}")
    outdir = Path(outdir)
    if not outdir.is_dir():
        raise ValueError(f"outdir must be an existing folder (a built site), got {outdir}")
    images = outdir / "_images"
    if not images.is_dir():
        return 0
    return sum(rewrite_page(page, images) for page in sorted(outdir.rglob("*.html")))


def _finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    rewrite_site(app.outdir)


def setup(app) -> dict[str, Any]:
    """Sphinx entry point: rewrite the pages of an HTML build once it is written (``build-finished``)."""
    app.connect("build-finished", _finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["PHONE_MAX_WIDTH", "PHONE_MEDIA", "PHONE_SUFFIX", "embed_phone_variant", "split_phone_variant",
           "rewrite_page", "rewrite_site", "setup"]

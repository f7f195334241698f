"""Sphinx hooks that turn the built book into a site a reader can use offline.

Loaded by the book's ``_config.yml`` (``sphinx.extra_extensions: [memcap.textbook.site]``). Each hook fixes one
thing the default Jupyter Book 1.x stack gets wrong for this book:

- every chapter offers its source as a Jupyter notebook (``.ipynb``, converted from the MyST source by
  jupytext, without outputs, so it opens in Jupyter, Colab or VS Code) beside the ``.md`` download;
- the whole source of the book (chapters, library, tests, requirements) is offered as one zip archive,
  so a reader can run the chapters without access to the repository, and the whole book as one PDF
  (:mod:`memcap.textbook.pdf`; ``book/_static/memcap.js`` drops that entry where the PDF was not made);
- no leftover Thebe/Binder configuration (the book has no live kernels; the default points at an
  unrelated Binder repository and loads a script from a CDN when clicked);
- a favicon (browsers ask for one on every page: without it every page logs a 404);
- images get their figure's caption as alt text instead of their file path;
- inline math keeps the punctuation glued to it on its line (a browser may otherwise start a line with the
  "." after a formula);
- every figure is shown on a phone as its narrow, stacked drawing (:func:`memcap.textbook.page.stack_for_phone`,
  placed in a ``<picture>`` by ``memcap.textbook.phone_figures``), so that it fits the screen with legible text;
- the ``id`` attributes that sphinx-proof and sphinx-exercise give to *every* box
  (``proof``, ``proof-content``, ``solution-content``, ...) are made unique per box;
- the directives of the instructors' page, ``{memcap-exercise-index}`` and ``{memcap-problem-sets}``
  (:mod:`memcap.textbook.course`);
- the directive ``{memcap-build-status}`` writes the table of the *Build status* page: every chapter in
  book order, its title, how long it took to execute, and the total.
"""
from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

try:
    from docutils import nodes
    from sphinx.application import Sphinx
    from sphinx.transforms.post_transforms import SphinxPostTransform
    from sphinx.util.docutils import SphinxDirective
except ImportError as exc:  # a plain install (without the book extra) has no Sphinx
    raise ImportError(f"{__name__} is part of the book's Sphinx build and needs the book extra "
                      f"(pip install -e '.[book]'): {exc}") from exc

SOURCE_ARCHIVE = "memcap-textbook-source.zip"
"""File name of the source archive, placed in the site's ``_downloads`` folder."""

_FAVICON = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#1f4e79"/>
<text x="16" y="23" font-family="serif" font-size="20" text-anchor="middle" fill="#ffffff">&#945;</text>
</svg>
"""

_SHARED_IDS = ("proof-content", "exercise-content", "solution-content")
_ARCHIVE_TOP = ("_config.yml", "_toc.yml", "README.md", "CONTRIBUTING.md", "requirements.txt", "requirements.in",
                "requirements-models.txt", "pyproject.toml")
_ARCHIVE_DIRS = ("book", "memcap", "tests", ".ci")


# --- notebooks and sources ---------------------------------------------------------------------------

def _is_chapter_notebook(path: Path) -> bool:
    if path.suffix != ".md" or not path.is_file():
        return False
    head = path.read_text(encoding="utf-8")[:600]
    return head.startswith("---") and "kernelspec" in head


def write_notebook(source: Path, target: Path) -> Path:
    """Convert the MyST chapter ``source`` to a Jupyter notebook at ``target`` (no outputs)."""
    import jupytext

    notebook = jupytext.read(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(notebook, target, fmt="ipynb")
    return target


def _add_notebook_download(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is None or app.builder.format != "html":
        return
    source = Path(app.env.doc2path(pagename))
    if not _is_chapter_notebook(source):
        return
    write_notebook(source, Path(app.outdir) / "_sources" / f"{pagename}.ipynb")
    context["ipynb_source"] = f"{pagename}.ipynb"  # read by sphinx-book-theme's download menu


def _add_archive_button(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    from memcap.textbook.pdf import PDF_NAME

    for button in context.get("header_buttons", []):
        if button.get("label") == "download-buttons":
            button["buttons"].append({
                "type": "link",
                "url": context["pathto"](PDF_NAME, 1),
                "text": "book (.pdf)",
                "tooltip": "The whole book as one PDF, for print (made by python -m memcap pdf)",
                "icon": "fas fa-file-pdf",
                "label": "download-book-pdf-button",
            })
            button["buttons"].append({
                "type": "link",
                "url": context["pathto"](f"_downloads/{SOURCE_ARCHIVE}", 1),
                "text": "source (.zip)",
                "tooltip": "Download the book's source: chapters, library, tests",
                "icon": "fas fa-file-archive",
                "label": "download-archive-button",
            })


def _archive_members(root: Path) -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True)
        files = [root / line for line in listed.stdout.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = [root / name for name in _ARCHIVE_TOP]
        for folder in _ARCHIVE_DIRS:
            files += [p for p in (root / folder).rglob("*") if "__pycache__" not in p.parts]
    return sorted(p for p in files if p.is_file())


def write_source_archive(root: Path, target: Path) -> Path:
    """Zip the book's source tree (the files git tracks, else the known top-level folders) to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in _archive_members(root):
            archive.write(path, Path("memcap-textbook") / path.relative_to(root))
    return target


def _finish(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    write_source_archive(Path(app.srcdir), Path(app.outdir) / "_downloads" / SOURCE_ARCHIVE)


# --- chrome ------------------------------------------------------------------------------------------

def _favicon(app: Sphinx, config) -> None:
    if config.html_favicon:
        return
    path = Path(app.doctreedir).parent / "memcap-favicon.svg"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_FAVICON, encoding="utf-8")
    config.html_favicon = str(path)


def _singlehtml_handlers(app: Sphinx) -> None:
    """Give the one-page build (``singlehtml``, for the PDF) every HTML node handler. Sphinx uses the handlers
    registered for a builder's name *instead of* those for its format: sphinx-exercise registers some for
    ``singlehtml``, so myst-nb's, sphinx-proof's and sphinx-togglebutton's (registered for ``html``) were lost
    and the build failed on their nodes."""
    handlers = app.registry.translation_handlers
    name, kind = app.builder.name, app.builder.format
    if name != kind and name in handlers:
        handlers[name] = {**handlers.get(kind, {}), **handlers[name]}


def _drop_thebe(app: Sphinx, config) -> None:
    """Disconnect sphinx-thebe (loaded by Jupyter Book by default): the book configures no live kernel."""
    for listeners in app.events.listeners.values():
        for listener in list(listeners):
            if getattr(listener.handler, "__module__", "").startswith("sphinx_thebe"):
                listeners.remove(listener)
    for files in (app.registry.css_files, app.registry.js_files):
        files[:] = [entry for entry in files if "thebe" not in str(entry[0] or "")]


class _ImageAltText(SphinxPostTransform):
    """Images without alt text get their figure's caption (else a generic description), not a path."""

    default_priority = 400

    def run(self, **kwargs: Any) -> None:
        for image in self.document.findall(nodes.image):
            if image.get("alt"):
                continue
            figure = image.parent
            while figure is not None and not isinstance(figure, nodes.figure):
                figure = figure.parent
            caption = next(iter(figure.findall(nodes.caption)), None) if figure is not None else None
            text = " ".join(caption.astext().split()) if caption is not None else ""
            image["alt"] = (text[:297] + "...") if len(text) > 300 else (text or "Figure drawn by the code above")


class _MathKeepsItsPunctuation(SphinxPostTransform):
    """Inline math and the characters glued to it (no space between: the full stop or comma after it, the
    bracket before it, "-dimensional") go into one ``<span class="memcap-nowrap">``, so that a line never
    starts with a lone "." or ends with a lone "(": browsers may break on either side of MathJax's
    formula box (an atomic inline) even where the text has no space. ``memcap.css`` keeps the span on one
    line; ``memcap.js`` lets it wrap again around a formula wider than its column."""

    default_priority = 400

    def run(self, **kwargs: Any) -> None:
        for math in list(self.document.findall(nodes.math)):
            parent = math.parent
            if parent is None or isinstance(parent, nodes.inline) and "memcap-nowrap" in parent["classes"]:
                continue
            index = parent.index(math)
            before, after = _glued(parent, index - 1, at_end=True), _glued(parent, index + 1, at_end=False)
            if not before and not after:
                continue
            box = nodes.inline(classes=["memcap-nowrap"])
            start, end = (index - 1 if before else index), (index + 2 if after else index + 1)
            del parent[start:end]   # by position: Text nodes compare as strings, so remove() may pick a twin
            box += ([nodes.Text(before[1])] if before else []) + [math] + ([nodes.Text(after[0])] if after else [])
            around = ([nodes.Text(before[0])] if before and before[0] else []) + [box]
            parent.insert(start, around + ([nodes.Text(after[1])] if after and after[1] else []))


def _glued(parent: nodes.Element, index: int, *, at_end: bool) -> tuple[str, str] | None:
    """The text sibling ``parent[index]`` split as (rest, glued) when ``at_end`` (glued: the non-space
    characters it ends with) or as (glued, rest) otherwise (those it starts with); None when it is not
    text or has no such characters."""
    if not 0 <= index < len(parent.children) or not isinstance(parent[index], nodes.Text):
        return None
    text = str(parent[index])
    found = re.search(r"\S+$", text) if at_end else re.match(r"\S+", text)
    if found is None:
        return None
    return (text[:found.start()], found.group()) if at_end else (found.group(), text[found.end():])


class _UniqueBoxIds(SphinxPostTransform):
    """sphinx-proof and sphinx-exercise give every box's body the same id: derive one from the box."""

    default_priority = 400

    def run(self, **kwargs: Any) -> None:
        used: set[str] = set()
        for node in self.document.findall(nodes.Element):
            if (isinstance(node, nodes.section) and node.children
                    and isinstance(node.children[0], nodes.title)):
                continue  # a heading such as "## Proof" keeps its id: the page's table of contents links it
            ids = node.get("ids", [])
            for i, ident in enumerate(ids):
                # a {prf:proof} box is an admonition with the id "proof" (sphinx-proof), every one
                proof_box = ident == "proof" and isinstance(node, nodes.admonition)
                if ident not in _SHARED_IDS and not proof_box:
                    continue
                parent = node.parent
                while parent is not None and not parent.get("ids"):
                    parent = parent.parent
                base = f"{parent['ids'][0]}-{ident}" if parent is not None else ident
                unique, k = base, 1
                while unique in used:
                    k += 1
                    unique = f"{base}-{k}"
                used.add(unique)
                ids[i] = unique


# --- the build status table -------------------------------------------------------------------------

class build_status(nodes.General, nodes.Element):
    """Placeholder for the build status table, filled once every chapter has been executed."""


class BuildStatusDirective(SphinxDirective):
    """``{memcap-build-status}``: every chapter in book order, its execution time, and the total."""

    def run(self):
        return [build_status()]


def _chapters_in_order(app: Sphinx) -> list[str]:
    from memcap.textbook.edition import toc_documents

    return toc_documents(app.srcdir)


def _status_table(app: Sphinx, docname: str) -> nodes.table:
    from myst_nb.sphinx_ import NbMetadataCollector
    from sphinx.addnodes import pending_xref

    data = NbMetadataCollector.get_doc_data(app.env)
    table = nodes.table(classes=["memcap-status"])
    group = nodes.tgroup(cols=3)
    table += group
    for width in (70, 15, 15):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for text in ("Chapter", "Execution time", "Result"):
        row += nodes.entry("", nodes.paragraph(text=text))
    head += row
    body = nodes.tbody()
    group += body
    total = 0.0
    for doc in _chapters_in_order(app):
        exec_data = data.get(doc, {}).get("exec_data")
        if not exec_data:
            continue
        runtime = exec_data.get("runtime") or 0.0
        total += runtime
        link = pending_xref(refdoc=docname, reftarget="/" + doc, reftype="doc", refdomain="std",
                            refexplicit=False, refwarn=True)
        link += nodes.inline(text=doc)
        row = nodes.row()
        row += nodes.entry("", nodes.paragraph("", "", link))
        row += nodes.entry("", nodes.paragraph(text=f"{runtime:.1f} s"))
        row += nodes.entry("", nodes.paragraph(text="executed" if exec_data.get("succeeded") else "FAILED"))
        body += row
    row = nodes.row(classes=["memcap-status-total"])
    row += nodes.entry("", nodes.paragraph(text="All chapters"))
    row += nodes.entry("", nodes.paragraph(text=f"{total:.0f} s"))
    row += nodes.entry("", nodes.paragraph(text=""))
    body += row
    return table


class _FillBuildStatus(SphinxPostTransform):
    default_priority = 8  # before references are resolved, so the chapter links get their titles

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(build_status)):
            node.replace_self(_status_table(self.app, self.env.docname))


def _status_needs_update(app: Sphinx, env) -> list[str]:
    """The status page depends on every chapter's execution: re-write it whenever one was executed."""
    return [doc for doc in env.found_docs if doc.endswith("appendix/status")]


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("memcap.textbook.course")   # the exercise index and problem sets of the instructors' page
    app.setup_extension("memcap.textbook.phone_figures")   # phone drawings of the figures, in <picture>
    app.connect("config-inited", _favicon)
    app.connect("config-inited", _drop_thebe, priority=900)
    app.connect("builder-inited", _singlehtml_handlers)
    app.connect("html-page-context", _add_notebook_download, priority=400)
    app.connect("html-page-context", _add_archive_button, priority=600)
    app.connect("build-finished", _finish)
    app.connect("env-updated", _status_needs_update)
    app.add_post_transform(_ImageAltText)
    app.add_post_transform(_UniqueBoxIds)
    app.add_post_transform(_MathKeepsItsPunctuation)
    app.add_post_transform(_FillBuildStatus)
    app.add_node(build_status)
    app.add_directive("memcap-build-status", BuildStatusDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["SOURCE_ARCHIVE", "setup", "write_notebook", "write_source_archive"]

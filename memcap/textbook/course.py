"""The instructors' pages: the exercise index and the problem sets, as Sphinx directives.

Loaded by :mod:`memcap.textbook.site`. Both read every chapter's exercises when the book is built
(:func:`memcap.textbook.edition.exercise_index`: kind, difficulty and estimated time, from the tag that opens each
exercise) and which of them have a checker (:func:`memcap.textbook.exercises.registry`), so they always describe
the book as it is.

- ``{memcap-exercise-index}``: one row per exercise: chapter, a link to the exercise, kind, difficulty,
  time, whether ``check`` grades it; in the full edition, when the config value ``memcap_student_url``
  says where the student edition is published (``student/`` beside the full edition's root, or an
  address), also a link to the same exercise there. Unset (the default), there is no such column, so the
  built site never links to pages it does not have. The student edition (config value
  ``memcap_edition = "student"``, set by :func:`memcap.textbook.edition.build_student_edition`) links only
  to its own pages.
- ``{memcap-checkers}``: every exercise with a checker, the call students write and what it tests
  (the first paragraph of the checker's docstring).
- ``{memcap-problem-sets}``: its content lists problem sets, one per line, ``Title: book/a, book/b``;
  each becomes one paragraph: the set's estimated time, its chapters and links to its exercises (their
  kind, difficulty and time are in the exercise index, once).
"""
from __future__ import annotations

from typing import Any

try:
    from docutils import nodes
    from sphinx.addnodes import pending_xref
    from sphinx.application import Sphinx
    from sphinx.util.docutils import SphinxDirective
except ImportError as exc:  # a plain install (without the book extra) has no Sphinx
    raise ImportError(f"{__name__} is part of the book's Sphinx build and needs the book extra "
                      f"(pip install -e '.[book]'): {exc}") from exc

__all__ = ["load_exercises", "setup", "student_link"]


def load_exercises(root) -> list[dict[str, Any]]:
    """The exercise index of the book at ``root``, each row with ``checker`` (the call, or ``None``)."""
    from memcap.textbook.edition import exercise_index
    from memcap.textbook.exercises import registry

    checkers = registry()
    return [{**row, "checker": checkers[row["label"]].call if row["label"] in checkers else None}
            for row in exercise_index(root)]


def student_link(base: str, fromdoc: str, doc: str, label: str) -> str:
    """URL of exercise ``label`` of ``doc`` in the student edition published at ``base``, from page ``fromdoc``.

    ``base`` is absolute (``https://...``) or relative to the full edition's root (``student/``).
    """
    base = base if base.endswith("/") else base + "/"
    if "://" not in base and not base.startswith("/"):
        base = "../" * fromdoc.count("/") + base
    return f"{base}{doc}.html#{label}"


def _text(text: str) -> nodes.paragraph:
    return nodes.paragraph(text=text)


def _doc_link(fromdoc: str, doc: str) -> nodes.paragraph:
    link = pending_xref(refdoc=fromdoc, reftarget="/" + doc, reftype="doc", refdomain="std", refexplicit=False,
                        refwarn=True)
    link += nodes.inline(text=doc)
    return nodes.paragraph("", "", link)


def _ref_link(fromdoc: str, label: str) -> nodes.paragraph:
    link = pending_xref(refdoc=fromdoc, reftarget=label, reftype="ref", refdomain="std", refexplicit=False,
                        refwarn=True)
    link += nodes.inline(text=label)
    return nodes.paragraph("", "", link)


def _table(header: list[str], rows: list[list[nodes.Node]], widths: list[int], classes: list[str]) -> nodes.table:
    table = nodes.table(classes=classes)
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for text in header:
        row += nodes.entry("", _text(text))
    head += row
    body = nodes.tbody()
    group += body
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += nodes.entry("", cell)
        body += row
    return table


def _minutes(total: int) -> str:
    if total < 90:
        return f"{total} min"
    return f"{total // 60} h" + (f" {total % 60:02d} min" if total % 60 else "")


class _Directive(SphinxDirective):
    def exercises(self) -> list[dict[str, Any]]:
        from memcap.textbook.edition import toc_documents

        root = self.env.srcdir
        for doc in toc_documents(root):
            self.env.note_dependency(str(root / f"{doc}.md"))
        return load_exercises(root)

    @property
    def student(self) -> bool:
        return self.config.memcap_edition == "student"

    @property
    def links_to_student(self) -> bool:
        """True in the full edition when ``memcap_student_url`` says where the student edition is published."""
        return not self.student and bool(self.config.memcap_student_url.strip())

    def exercise_rows(self, exercises: list[dict[str, Any]]) -> list[list[nodes.Node]]:
        rows = []
        for ex in exercises:
            cells = [_doc_link(self.env.docname, ex["doc"])]
            cells += [_ref_link(self.env.docname, ex["label"]), _text(ex["kind"]), _text(ex["difficulty"] or "–"),
                      _text(f"{ex['minutes']} min" if ex["minutes"] else "–"),
                      _text("yes" if ex["checker"] else "")]
            if self.links_to_student:
                para = nodes.paragraph()
                para += nodes.reference("", "open", internal=False, classes=["memcap-student-link"],
                                        refuri=student_link(self.config.memcap_student_url, self.env.docname,
                                                            ex["doc"], ex["label"]))
                cells.append(para)
            rows.append(cells)
        return rows

    def header(self) -> tuple[list[str], list[int]]:
        header = ["Chapter", "Exercise", "Kind", "Difficulty", "Time", "Checker"]
        widths = [30, 16, 12, 10, 8, 8]
        if self.links_to_student:
            header.append("Student edition")
            widths.append(16)
        return header, widths


class ExerciseIndexDirective(_Directive):
    """``{memcap-exercise-index}``: every exercise of the book, in reading order."""

    def run(self) -> list[nodes.Node]:
        exercises = self.exercises()
        header, widths = self.header()
        table = _table(header, self.exercise_rows(exercises), widths,
                       ["memcap-exercise-index"])
        kinds: dict[str, int] = {}
        for ex in exercises:
            kinds[ex["kind"]] = kinds.get(ex["kind"], 0) + 1
        rated = [ex for ex in exercises if ex["minutes"]]
        checked = sum(bool(ex["checker"]) for ex in exercises)
        summary = (f"{len(exercises)} exercises: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
                   + f". {checked} have a checker. {len(rated)} are rated, with an estimated "
                   f"{_minutes(sum(ex['minutes'] for ex in rated))} in all.")
        return [table, _text(summary)]


class ProblemSetsDirective(_Directive):
    """``{memcap-problem-sets}``: one line per set, ``Title: book/a, book/b``."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        exercises = self.exercises()
        docs = {ex["doc"] for ex in exercises}
        out: list[nodes.Node] = []
        for number, line in enumerate((ln for ln in self.content if ln.strip()), start=1):
            title, _, chapters = line.partition(":")
            wanted = [c.strip() for c in chapters.split(",") if c.strip()]
            unknown = [c for c in wanted if c not in docs]
            if not title.strip() or not wanted or unknown:
                raise self.error(f"problem set line must read 'Title: book/a, book/b' with chapters that have "
                                 f"exercises; got {line!r}" + (f" (unknown: {unknown})" if unknown else ""))
            chosen = [ex for doc in wanted for ex in exercises if ex["doc"] == doc]
            rated = [ex["minutes"] for ex in chosen if ex["minutes"]]
            missing = len(chosen) - len(rated)
            time = f"about {_minutes(sum(rated))}" + (f", plus {missing} exercises not yet rated" if missing else "")
            heading = nodes.paragraph(classes=["memcap-problem-set"])
            heading += nodes.strong(text=f"Problem set {number}: {title.strip()}")
            heading += nodes.Text(f" ({len(chosen)} exercises, {time}). Chapters: ")
            for k, doc in enumerate(wanted):
                if k:
                    heading += nodes.Text(", ")
                heading += _doc_link(self.env.docname, doc).children[0]
            heading += nodes.Text(". Exercises: ")
            for k, ex in enumerate(chosen):
                if k:
                    heading += nodes.Text(", ")
                heading += _ref_link(self.env.docname, ex["label"]).children[0]
            heading += nodes.Text(" (details in the exercise index below).")
            out.append(heading)
        if not out:
            raise self.error("memcap-problem-sets needs at least one line 'Title: book/a, book/b'")
        return out


class CheckersDirective(_Directive):
    """``{memcap-checkers}``: every exercise with a checker, the call students write, what it tests."""

    def run(self) -> list[nodes.Node]:
        from memcap.textbook.exercises import registry

        checkers = registry()
        items = nodes.definition_list(classes=["memcap-checkers"])
        for ex in self.exercises():
            if not ex["checker"]:
                continue
            term = nodes.term()
            term += _ref_link(self.env.docname, ex["label"]).children[0]
            term += nodes.Text(": ")
            term += nodes.literal(text=ex["checker"])
            items += nodes.definition_list_item("", term, nodes.definition("", _text(checkers[ex["label"]].summary)))
        return [items]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("memcap_edition", "full", "env", [str])
    app.add_config_value("memcap_student_url", "", "env", [str])
    app.add_directive("memcap-exercise-index", ExerciseIndexDirective)
    app.add_directive("memcap-problem-sets", ProblemSetsDirective)
    app.add_directive("memcap-checkers", CheckersDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

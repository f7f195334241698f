"""The student edition: the same book with every solution removed; the index of the exercises.

sphinx-exercise's ``hide_solutions`` option crashes on gated solutions (``solution-start`` /
``solution-end``, needed so that code inside a solution executes), so instead we copy the sources,
strip the solution blocks from the copy, and build that copy with the same strict flags (and the
Sphinx config value ``memcap_edition = "student"``, read by :mod:`memcap.textbook.course`). Each page of the
student edition offers its notebook like the full edition (:mod:`memcap.textbook.site`): without solutions,
with the exercises' ``check`` calls in place.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_FENCE = re.compile(r"^(`{3,}|:{3,})\{(solution-start|solution-end|solution)\}")
_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def _cells_sha(text: str) -> str:
    digest = hashlib.sha256()
    for body in _CODE_CELL.findall(text):
        digest.update(body.encode("utf-8") + b"\0")
    return digest.hexdigest()[:12]


def code_digest(text: str) -> str:
    """A fingerprint of a MyST chapter's code, ``'OUTSIDE/ALL'``: the first 12 hex digits of the SHA-256 of
    the code cells' bodies (option lines and sources, in order) outside the solutions, then of all of them.
    It changes when a code cell changes, not when only prose does. A record of a run of the chapter's cells
    (the GPU record) keeps it; :func:`code_changed` compares it with a chapter's text today."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return f"{_cells_sha(strip_solutions(text))}/{_cells_sha(text)}"


def code_changed(recorded: str, text: str) -> bool:
    """Whether the code of chapter ``text`` differs from the code a record's :func:`code_digest`
    (``recorded``) was taken of. Where ``text`` has no solutions (the student edition strips them) only the
    code outside the solutions can be compared, and only it is."""
    if not isinstance(recorded, str) or not re.fullmatch(r"[0-9a-f]{12}/[0-9a-f]{12}", recorded):
        raise ValueError(f"recorded must be a code_digest ('OUTSIDE/ALL', 12 hex digits each), got {recorded!r}")
    outside, every = code_digest(text).split("/")
    old_outside, old_every = recorded.split("/")
    return outside != old_outside or (every != outside and every != old_every)


def strip_solutions(text: str) -> str:
    """Remove every solution (gated ``solution-start``...``solution-end`` or a ``{solution}`` block).

    Exercises stay. Raises ``ValueError`` if a gated solution is never closed, since silently keeping
    (or dropping) the rest of the chapter would produce a wrong edition.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        fence, kind = match.groups()
        if kind == "solution-end":
            raise ValueError(f"line {i + 1}: solution-end without a matching solution-start")
        if kind == "solution":  # a plain directive: skip to its closing fence
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != fence:
                j += 1
            if j == len(lines):
                raise ValueError(f"line {i + 1}: solution block is never closed by {fence}")
            i = j + 1
            continue
        j = i + 1  # gated: skip everything up to and including the solution-end block
        while j < len(lines) and not re.match(r"^(`{3,}|:{3,})\{solution-end\}", lines[j]):
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: solution-start is never closed by a solution-end")
        end_fence = re.match(r"^(`{3,}|:{3,})", lines[j]).group(1)
        k = j + 1
        while k < len(lines) and lines[k].rstrip() != end_fence:
            k += 1
        i = k + 1
    return "".join(out)


def build_student_edition(root: str | Path, output: str | Path, *, pdf: bool = False) -> Path:
    """Build the book at ``root`` without solutions into ``output``; return the HTML folder. With ``pdf``, also
    its PDF, at the top of that folder (:func:`memcap.textbook.pdf.build_pdf`)."""
    if not isinstance(pdf, bool):
        raise TypeError(f"pdf must be a bool, got {type(pdf).__name__}")
    root, output = Path(root).resolve(), Path(output).resolve()
    if not (root / "_toc.yml").is_file():
        raise ValueError(f"root must be the book's folder (with _toc.yml), got {root}")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "book-src"
        copy.mkdir()
        for name in ("_config.yml", "_toc.yml"):
            shutil.copy2(root / name, copy / name)
        shutil.copytree(root / "book", copy / "book")
        for md in (copy / "book").rglob("*.md"):
            md.write_text(strip_solutions(md.read_text(encoding="utf-8")), encoding="utf-8")
        config = copy / "_config.yml"
        text = config.read_text(encoding="utf-8")
        if "\n  config:\n" not in text:
            raise ValueError("_config.yml has no sphinx: config: section to mark the student edition in")
        text = text.replace('title: "Memorization Capacity of Attention"',
                            'title: "Memorization Capacity of Attention (student edition)"')
        config.write_text(text.replace("\n  config:\n", "\n  config:\n    memcap_edition: student\n", 1),
                          encoding="utf-8")
        jb = Path(sys.executable).with_name("jupyter-book")
        subprocess.run([str(jb), "build", str(copy), "--path-output", str(output),
                        "--all", "-W", "-n", "--keep-going"], check=True)
        if pdf:
            from memcap.textbook.pdf import build_pdf

            build_pdf(copy, output)
    return output / "_build" / "html"


_EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise-start\}[^\n]*\n:label:\s*(\S+)\s*\n(?:.*\n)*?\1\n", re.MULTILINE)
_KIND = re.compile(r"^(?:\*\*)?\((\w[\w -]*?)(?:,\s*(easy|medium|hard))?(?:,\s*(\d+)\s*min)?\.?\)(?:\*\*)?")
DIFFICULTIES = ("easy", "medium", "hard")
"""The difficulty levels an exercise's tag may give."""
_TITLE = re.compile(r"^#\s+(.+)$", re.MULTILINE)


def toc_documents(root: str | Path) -> list[str]:
    """Every document of the book's ``_toc.yml``, in reading order, as paths without suffix
    (``book/setting``)."""
    import yaml

    root = Path(root).resolve()
    if not (root / "_toc.yml").is_file():
        raise ValueError(f"root must be the book's folder (with _toc.yml), got {root}")
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    docs = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                docs.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    return docs


def exercise_index(root: str | Path) -> list[dict[str, str | int | None]]:
    """Every exercise of the book, in table-of-contents order.

    Returns one dict per exercise with the chapter's document name (``book/setting``), the chapter's
    title, the exercise's label, and what the tag that opens its text says: the kind, then optionally
    the difficulty (one of :data:`DIFFICULTIES`) and the estimated time in minutes, as in
    ``**(Coding, medium, 20 min.)**`` or ``(Proof.)``. Missing parts are ``"other"`` (kind), ``None``
    (difficulty, minutes).
    """
    root = Path(root).resolve()
    docs = toc_documents(root)
    rows = []
    for doc in docs:
        text = (root / f"{doc}.md").read_text(encoding="utf-8")
        title = _TITLE.search(text)
        for match in _EXERCISE.finditer(text):
            body = text[match.end():].lstrip()
            kind = _KIND.match(body)
            rows.append({"doc": doc, "chapter": title.group(1).strip() if title else doc,
                         "label": match.group(2), "kind": kind.group(1).lower() if kind else "other",
                         "difficulty": kind.group(2) if kind else None,
                         "minutes": int(kind.group(3)) if kind and kind.group(3) else None})
    return rows

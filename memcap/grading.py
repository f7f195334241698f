"""Grade a folder of submitted notebooks: ``python -m memcap grade SUBMISSIONS/ --chapter X``.

Each submission (``SUBMISSIONS/<student>.ipynb``, or ``SUBMISSIONS/<student>/`` holding one notebook) is
copied into a private folder and executed headlessly with nbclient, every cell in order, errors
allowed (a failing cell does not stop the rest). Then, in the same kernel, one extra cell per exercise
of the chapter checks again the last answer the notebook passed to ``check`` (``memcap.exercises.grade``).
The verdicts land in ``OUTPUT/grades.csv`` (student, exercise, result, message), a short summary in
``OUTPUT/summary.txt``, and each executed notebook in ``OUTPUT/notebooks/``.

What contains a broken or malicious notebook:

- **time**: every cell has a time limit (the kernel is interrupted, the next cell runs), and the whole
  notebook has one (the kernel is killed; every exercise fails with the reason);
- **output**: at most ``max_output`` bytes of output are kept per notebook; files the kernel writes
  are capped at 64 MiB each;
- **files and network** (sandbox ``bwrap``, used when bubblewrap is installed): the kernel runs in a
  bubblewrap sandbox where the whole file system is read-only except the submission's own copy (its
  HOME and TMPDIR are inside it), the submissions folder and the output folder look empty, there is no
  network interface, and the kernel has its own process namespace (no process outlives it); so it
  cannot delete, change or read the other submissions or the grader's results, nor change anything
  else, nor reach the network;
- without bubblewrap (sandbox ``none``), each kernel still runs in its own copy with its own HOME and
  TMPDIR, and Python-level socket connections are refused, but a notebook that names an absolute path
  can read and change any file the grading user may, and a subprocess can reach the network. The
  summary says which sandbox was used.

A notebook that cannot be read, crashes its kernel, or runs out of time is graded as failed on every
exercise, with the reason, and the next submission is graded as usual.

Why not nbgrader or otter-grader: nbgrader (0.9.6) brings a Jupyter server, JupyterLab, a SQL gradebook
and a course folder layout, and runs notebooks without a sandbox; otter-grader (7.0.0) grades in Docker
containers (python-on-whales, a Docker daemon) and wants the assignment written in its own format.
Both would duplicate the book's exercises in a second format; here the checker of an exercise is the
one the chapter's solution asserts, and the grader is nbclient (already in the lock) plus bubblewrap.
"""
from __future__ import annotations

import asyncio
import atexit
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["GradeReport", "SANDBOXES", "find_submissions", "grade_folder", "resolve_chapter", "sandbox_available"]

SANDBOXES = ("auto", "bwrap", "none")
_MARKER = "MEMCAP-GRADE "
_GRADING_TAG = "memcap-grading"


@dataclass
class GradeReport:
    """What :func:`grade_folder` did: one row per (student, exercise), and where it wrote them."""

    chapter: str
    exercises: list[str]
    rows: list[dict[str, str]] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)   # student -> why the notebook did not finish
    sandbox: str = "none"
    seconds: float = 0.0
    csv_path: Path | None = None
    summary_path: Path | None = None

    def summary(self) -> str:
        """A few lines: the chapter, each student's score, each exercise's pass count, what went wrong."""
        students = sorted({r["student"] for r in self.rows})
        passed = {(r["student"], r["exercise"]) for r in self.rows if r["result"] == "pass"}
        lines = [f"chapter {self.chapter}: {len(students)} submissions, {len(self.exercises)} checked "
                 f"exercises, graded in {self.seconds:.0f} s (sandbox: {self.sandbox})"]
        for student in students:
            score = sum((student, ex) in passed for ex in self.exercises)
            note = f"  (notebook did not finish: {self.problems[student]})" if student in self.problems else ""
            lines.append(f"  {student}: {score}/{len(self.exercises)}{note}")
        for ex in self.exercises:
            lines.append(f"  {ex}: passed by {sum((s, ex) in passed for s in students)}/{len(students)}")
        return "\n".join(lines)


# --- what to grade ---------------------------------------------------------------------------------

def resolve_chapter(name: str) -> str:
    """The chapter with checkers that ``name`` designates: ``book/mahdavi/skip``, ``mahdavi/skip``,
    ``skip`` or ``skip.md`` all give ``book/mahdavi/skip``. Raises ``ValueError`` naming the choices."""
    from memcap.exercises import registry

    chapters = sorted({entry.chapter for entry in registry().values()})
    key = str(name).strip().removesuffix(".md").removesuffix(".ipynb").strip("/")
    matches = [c for c in chapters if c == key or c.endswith("/" + key)]
    if len(matches) != 1:
        what = "is ambiguous" if matches else "has no exercise with a checker"
        raise ValueError(f"chapter {name!r} {what}; chapters with checkers: {', '.join(chapters)}")
    return matches[0]


def find_submissions(folder: str | Path) -> dict[str, Path]:
    """Student name -> notebook: every ``*.ipynb`` directly in ``folder`` (the name is its stem) and every
    subfolder holding exactly one ``.ipynb`` (the name is the subfolder's). Raises ``ValueError``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"submissions folder {str(folder)!r} does not exist")
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.is_symlink() or path.name.startswith("."):
            continue
        name, notebook = path.stem, path
        if path.is_dir():
            notebooks = [p for p in path.glob("*.ipynb") if p.is_file() and not p.is_symlink()]
            name, notebook = path.name, (notebooks[0] if len(notebooks) == 1 else None)
        elif not (path.is_file() and path.suffix == ".ipynb"):
            notebook = None
        if notebook is None:
            continue
        if name in found:
            raise ValueError(f"two submissions of {name!r} in {str(folder)!r}: {found[name].name} and "
                             f"{path.name}")
        found[name] = notebook
    if not found:
        raise ValueError(f"no notebook in {str(folder)!r} (expected NAME.ipynb files or NAME/ folders "
                         "with one notebook each)")
    return found


# --- the sandbox -----------------------------------------------------------------------------------

def sandbox_available() -> bool:
    """True if bubblewrap is installed and can start a sandbox here (user namespaces allowed)."""
    import subprocess

    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--dev", "/dev",
                            "true"], capture_output=True)
    return probe.returncode == 0


def _copy_submission(notebook: Path, target: Path, whole_folder: bool) -> Path:
    """Copy the student's notebook (with ``whole_folder``, its folder's other files too; never links)."""
    target.mkdir(parents=True)
    if not whole_folder:
        shutil.copyfile(notebook, target / notebook.name)
        return target / notebook.name
    source = notebook.parent
    for path in sorted(source.rglob("*")):
        if path.is_symlink() or any(p.is_symlink() for p in path.relative_to(source).parents if p.name):
            continue
        dest = target / path.relative_to(source)
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    return target / notebook.name


def _maskable(folder: Path) -> bool:
    """True if hiding ``folder`` in the sandbox hides nothing the kernel needs (Python, memcap)."""
    needed = [Path(sys.executable).resolve(), Path(sys.prefix).resolve(),
              *(Path(p).resolve() for p in sys.path if p)]
    folder = folder.resolve()
    return folder.is_dir() and not any(folder == p or folder in p.parents for p in needed)


def _kernel_spec(spec_dir: Path, work: Path, run: Path, sandbox: str, hidden: list[Path]) -> None:
    """Write the kernel spec ``memcap-grading`` that starts the kernel in ``work`` (in bubblewrap, where
    everything is read-only but ``work`` and ``run``, and the folders ``hidden`` are empty)."""
    home, tmp = work / ".home", work / ".tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    python = [sys.executable, "-m", "memcap._grading_kernel", "-f", "{connection_file}"]
    argv = python
    if sandbox == "bwrap":
        masks = [arg for folder in hidden if _maskable(folder) for arg in ("--tmpfs", str(folder.resolve()))]
        argv = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *masks,
                "--bind", str(work), str(work), "--bind", str(run), str(run),
                "--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session",
                "--chdir", str(work), *python]
    env = {"HOME": str(home), "TMPDIR": str(tmp), "MPLCONFIGDIR": str(home / ".matplotlib"),
           "IPYTHONDIR": str(home / ".ipython"),
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    folder = spec_dir / "memcap-grading"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": argv, "display_name": "memcap grading", "language": "python",
        "interrupt_mode": "message", "env": env}), encoding="utf-8")


# --- one notebook ----------------------------------------------------------------------------------

def _grading_cells(labels: list[str]) -> list[Any]:
    import nbformat

    cells = []
    for label in labels:
        source = ("import json as _memcap_json\n"
                  "from memcap.exercises import grade as _memcap_grade\n"
                  f"print({_MARKER!r} + _memcap_json.dumps(_memcap_grade({label!r})))")
        cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": [_GRADING_TAG]}))
    return cells


def _client_class():
    from nbclient import NotebookClient

    class LimitedClient(NotebookClient):
        """nbclient, keeping at most ``max_output`` bytes of the student's cells' outputs."""

        max_output = 1_000_000
        kept = 0
        truncated = False

        def output(self, outs, msg, display_id, cell_index):
            tags = self.nb.cells[cell_index].get("metadata", {}).get("tags", [])
            if _GRADING_TAG in tags:
                return super().output(outs, msg, display_id, cell_index)
            size = len(json.dumps(msg.get("content", {})))
            if self.kept + size > self.max_output:
                if not self.truncated:
                    self.truncated = True
                    from nbformat.v4 import new_output

                    outs.append(new_output("stream", name="stderr", text=(
                        f"[memcap grade: output beyond {self.max_output} bytes dropped]\n")))
                return None
            self.kept += size
            return super().output(outs, msg, display_id, cell_index)

    return LimitedClient


def _run_notebook(path: Path, labels: list[str], spec_dir: Path, run: Path, *, cell_timeout: int,
                  timeout: int, max_output: int) -> tuple[Any, dict[str, dict], str | None]:
    """Execute the notebook at ``path`` plus the grading cells; return (notebook, verdicts, problem)."""
    import nbformat
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # anything a broken file can raise
        return None, {}, f"not a readable notebook: {type(err).__name__}: {str(err)[:200]}"
    nb.cells = [c for c in nb.cells if _GRADING_TAG not in c.get("metadata", {}).get("tags", [])]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.cells += _grading_cells(labels)
    nb.metadata["kernelspec"] = {"name": "memcap-grading", "display_name": "memcap grading",
                                 "language": "python"}
    km = AsyncKernelManager(kernel_name="memcap-grading", transport="ipc", ip=str(run / "kernel"),
                            connection_file=str(run / "kernel.json"),
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir)]))
    client = _client_class()(nb, km=km, timeout=cell_timeout, allow_errors=True, interrupt_on_timeout=True,
                             skip_cells_with_tag="memcap-grade-never-skip", record_timing=False,
                             shutdown_kernel="immediate", resources={"metadata": {"path": str(path.parent)}})
    client.max_output = max_output
    problem = None
    start = time.perf_counter()

    async def execute() -> None:
        try:
            with open(run / "kernel.log", "wb") as log:
                await asyncio.wait_for(client.async_execute(cwd=str(path.parent), stdout=log, stderr=log),
                                       timeout)
        finally:
            if km.has_kernel:
                await km.shutdown_kernel(now=True)

    try:
        asyncio.run(execute())
        atexit.unregister(client._cleanup_kernel)
    except Exception as err:  # out of time, a dead kernel, a kernel that would not start, ...
        if time.perf_counter() - start >= timeout:
            problem = f"the notebook did not finish within {timeout} s"
        else:
            problem = f"{type(err).__name__}: {str(err)[:200]}"
    verdicts: dict[str, dict] = {}
    for cell in nb.cells:
        if _GRADING_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            for line in text.splitlines():
                if line.startswith(_MARKER):
                    verdict = json.loads(line[len(_MARKER):])
                    verdicts[verdict["exercise"]] = verdict
    return nb, verdicts, problem


# --- the whole folder ------------------------------------------------------------------------------

def grade_folder(submissions: str | Path, chapter: str, output: str | Path, *, cell_timeout: int = 120,
                 timeout: int = 900, max_output: int = 1_000_000, sandbox: str = "auto",
                 log=print) -> GradeReport:
    """Grade every notebook in ``submissions`` on the checked exercises of ``chapter``; write the CSV,
    the summary and the executed notebooks into ``output``. See the module docstring."""
    import nbformat

    from memcap.exercises import chapter_labels

    if sandbox not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {SANDBOXES}, got {sandbox!r}")
    doc = resolve_chapter(chapter)
    labels = chapter_labels(doc)
    found = find_submissions(submissions)
    output = Path(output).resolve()
    if sandbox == "auto":
        sandbox = "bwrap" if sandbox_available() else "none"
    elif sandbox == "bwrap" and not sandbox_available():
        raise ValueError("sandbox 'bwrap' needs bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) "
                         "and user namespaces")
    if sandbox == "none":
        log("warning: bubblewrap is not available: notebooks are not kept from changing files outside "
            "their folder (install bubblewrap to contain them)")
    report = GradeReport(doc, labels, sandbox=sandbox)
    start = time.perf_counter()
    (output / "notebooks").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memcap-grade-") as tmp:
        for k, (student, notebook) in enumerate(found.items()):
            private = Path(tmp) / f"submission-{k}"
            work, run, specs = private / student, private / "run", private / "kernels"
            run.mkdir(parents=True)
            copy = _copy_submission(notebook, work, whole_folder=notebook.parent != Path(submissions))
            _kernel_spec(specs, work, run, sandbox, hidden=[Path(submissions), output])
            t0 = time.perf_counter()
            nb, verdicts, problem = _run_notebook(copy, labels, specs, run, cell_timeout=cell_timeout,
                                                  timeout=timeout, max_output=max_output)
            if problem:
                report.problems[student] = problem
            for label in labels:
                verdict = verdicts.get(label)
                if verdict is None:
                    why = problem or "the grading cell gave no verdict"
                    verdict = {"passed": False, "message": f"not graded: {why}"}
                report.rows.append({"student": student, "exercise": label,
                                    "result": "pass" if verdict["passed"] else "fail",
                                    "message": verdict["message"]})
            if nb is not None:
                nbformat.write(nb, output / "notebooks" / f"{student}.ipynb")
            score = sum(r["result"] == "pass" for r in report.rows if r["student"] == student)
            log(f"{student}: {score}/{len(labels)} in {time.perf_counter() - t0:.0f} s"
                + (f" ({problem})" if problem else ""))
            shutil.rmtree(private, ignore_errors=True)
    report.seconds = time.perf_counter() - start
    report.csv_path = output / "grades.csv"
    with open(report.csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["student", "exercise", "result", "message"])
        writer.writeheader()
        writer.writerows(report.rows)
    report.summary_path = output / "summary.txt"
    report.summary_path.write_text(report.summary() + "\n", encoding="utf-8")
    return report

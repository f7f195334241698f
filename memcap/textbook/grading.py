"""Grade a folder of submitted notebooks: ``python -m memcap grade SUBMISSIONS/ --chapter X``.

Each submission (``SUBMISSIONS/<student>.ipynb``, or ``SUBMISSIONS/<student>/`` holding one notebook) is
copied into a private folder and executed headlessly with nbclient, every cell in order, errors allowed
(a failing cell does not stop the rest), in a fresh kernel inside a sandbox.

**Who decides the grade.** The grader, never the student's kernel. Once the notebook has run, the grader
asks the kernel, for each exercise of the chapter, for the answer the notebook last passed to ``check``,
as plain data in a format it controls and validates (``memcap.textbook._grading_wire``), and runs the
exercise's checker in its own process, on checkers it loaded before any notebook ran. An answer that is
a function stays in the kernel: when the checker calls it on a case of its own, the grader sends the
case to the kernel and validates what comes back. So a notebook can give any answer it likes, but
nothing it prints, patches or forges is a verdict: rewriting ``memcap.textbook.exercises`` in the kernel changes
nothing, a forged ``passed`` line is just output, and a malformed answer fails its exercise with the
reason. (What this cannot catch: an answer computed by calling the book's own reference code; the
checkers test answers, not how they were obtained.)

**One bad submission never stops the run.** Each student's rows are appended to ``OUTPUT/grades.csv``
(student, exercise, result, message, events) and written to ``OUTPUT/students/<student>.json`` as soon as
that student is graded; a notebook that cannot be read, crashes or kills its kernel, runs out of time or
answers garbage fails with the reason in its rows, and the next one is graded. At the end comes
``OUTPUT/summary.txt``; as each student finishes, the executed notebook goes to
``OUTPUT/notebooks/<student>.ipynb`` (the student's cells and what their code printed inside the
sandbox, and a ``[memcap grade: ...]`` line where a cell was stopped or output dropped; the grader's
requests are not in it) and the kernel's own output, for the instructor, to ``OUTPUT/logs/<student>.log``.

**What happened is said, not only logged.** A cell stopped by ``--cell-timeout``, a cell that ran out of
memory under ``--memory``, output dropped past ``--max-output``, a kernel that died and a notebook stopped
by ``--timeout`` each become an :class:`Event` (the cell, counted from 1 with Markdown cells included, and
a sentence such as "cell 3 stopped after 30 s (--cell-timeout)"), listed in the ``events`` column of the
student's rows, their JSON and the summary. An exercise left unanswered whose ``check(...)`` cell comes
at or after a stopped cell is "not reached: <the sentence>", not "no answer", so that a notebook that was
stopped is told from one that never attempted the exercise; an output cut stops nothing.

**The sandbox fails closed.** By default (``sandbox="bwrap"``) each kernel runs in bubblewrap: a cleared
environment; read-only mounts of only the interpreter, the virtual environment, ``memcap`` and the
book's sources; an empty private home, temporary folder and working folder (size-limited tmpfs; the
submission's files are copied in from a read-only mount of its private copy), so no other submission,
no result and nothing else of the machine is visible; no network namespace; new process, IPC and UTS
namespaces; no capabilities and no way to gain privileges; hard limits on memory, processes, file size
and open files; when the grader runs as root, the kernel runs as user ``nobody``. When the grading of a
notebook ends, its whole process namespace is killed. Without a working bubblewrap, :func:`grade_folder`
refuses to run unless ``sandbox="none"`` is passed explicitly; then the notebooks run as the grading
user with only the limits and a Python-level network block, and the grades are honour-system (the
summary says so).

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
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

__all__ = ["EVENT_KINDS", "Event", "GradeReport", "LIMIT_MAX", "Limits", "SANDBOXES", "TRIAL_SECONDS",
           "find_submissions", "grade_folder", "resolve_chapter", "sandbox_problem"]

SANDBOXES = ("bwrap", "none")
EVENT_KINDS = ("cell timeout", "memory", "output cut", "dead kernel", "notebook timeout")
_MEMORY_ERRORS = ("MemoryError", "_ArrayMemoryError", "OutOfMemoryError")   # Python, NumPy, torch
_NOBODY = 65534
_HOME, _WORK, _INPUT = "/home/student", "/submission", "/input"


@dataclass(frozen=True)
class Limits:
    """What one notebook may use: seconds per cell and per notebook, bytes of output kept, and the
    kernel's resource limits (address space per process, processes and threads, bytes per written file,
    open files, size of each private tmpfs in the sandbox)."""

    cell_timeout: int = 120
    timeout: int = 900
    max_output: int = 1_000_000
    memory: int = 4 * 2**30
    processes: int = 256
    file_size: int = 64 * 2**20
    open_files: int = 1024
    scratch: int = 512 * 2**20

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            if value > LIMIT_MAX:   # a resource limit is a signed 64-bit number of the kernel's
                raise ValueError(f"{name} must be at most {LIMIT_MAX}, got {value}")


LIMIT_MAX = 2**62
"""Largest value of a :class:`Limits` field (bytes, seconds or counts): beyond it a resource limit no longer
fits the kernel's signed 64-bit number, and the kernel would fail to start for every student alike."""


@dataclass(frozen=True)
class Event:
    """Something that stopped a cell or dropped a notebook's output while it was graded: ``cell`` is the
    cell's position in the notebook (counted from 1, Markdown cells included), ``kind`` one of
    ``EVENT_KINDS``, ``message`` the sentence the grade report gives, e.g. "cell 3 stopped after
    30 s (--cell-timeout)"."""

    cell: int
    kind: str
    message: str

    @property
    def stops(self) -> bool:
        """Whether the rest of the cell did not run (every kind but an output cut)."""
        return self.kind != "output cut"


@dataclass
class GradeReport:
    """What :func:`grade_folder` did: one row per (student, exercise), and where it wrote them."""

    chapter: str
    exercises: list[str]
    rows: list[dict[str, str]] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)   # student -> why the notebook did not finish
    events: dict[str, list[Event]] = field(default_factory=dict)   # student -> what stopped or cut it
    sandbox: str = "bwrap"
    seconds: float = 0.0
    csv_path: Path | None = None
    summary_path: Path | None = None

    def summary(self) -> str:
        """A few lines: the chapter, each student's score, each exercise's pass count, what went wrong."""
        from memcap.experiments.syn_prose import count_noun

        students = sorted({r["student"] for r in self.rows})
        passed = {(r["student"], r["exercise"]) for r in self.rows if r["result"] == "pass"}
        trust = "bwrap" if self.sandbox == "bwrap" else \
            "none: honour-system grades, the notebooks ran unsandboxed as the grading user"
        lines = [f"chapter {self.chapter}: {count_noun(len(students), 'submission')}, "
                 f"{count_noun(len(self.exercises), 'checked exercise')}, graded in {self.seconds:.0f} s "
                 f"(sandbox: {trust})"]
        for student in students:
            score = sum((student, ex) in passed for ex in self.exercises)
            notes = [event.message for event in self.events.get(student, [])]
            problem = self.problems.get(student)
            if problem and problem not in notes:
                notes.insert(0, f"notebook did not finish: {problem}")
            lines.append("; ".join([f"  {student}: {score}/{len(self.exercises)}", *notes]))
        for ex in self.exercises:
            lines.append(f"  {ex}: passed by {sum((s, ex) in passed for s in students)}/{len(students)}")
        return "\n".join(lines)


# --- what to grade ---------------------------------------------------------------------------------

def resolve_chapter(name: str) -> str:
    """The chapter with checkers that ``name`` designates: ``book/mahdavi/skip``, ``mahdavi/skip``,
    ``skip`` or ``skip.md`` all give ``book/mahdavi/skip``. Raises ``ValueError`` naming the choices."""
    from memcap.textbook.exercises import registry

    if not isinstance(name, str):
        raise TypeError(f"chapter must be a string, got {type(name).__name__}")
    chapters = sorted({entry.chapter for entry in registry().values()})
    key = name.strip().removesuffix(".md").removesuffix(".ipynb").strip("/")
    matches = [c for c in chapters if c == key or c.endswith("/" + key)]
    if len(matches) != 1:
        what = "is ambiguous" if matches else "has no exercise with a checker"
        raise ValueError(f"chapter {name!r} {what}; chapters with checkers: {', '.join(chapters)}")
    return matches[0]


def find_submissions(folder: str | Path, exclude: str | Path | None = None) -> dict[str, Path]:
    """Student name -> notebook: every ``*.ipynb`` directly in ``folder`` (the name is its stem) and every
    subfolder holding exactly one ``.ipynb`` (the name is the subfolder's), ``exclude`` (the output
    folder) left out. Raises ``ValueError``."""
    if not isinstance(folder, (str, Path)):
        raise TypeError(f"folder must be a path, got {type(folder).__name__}")
    if exclude is not None and not isinstance(exclude, (str, Path)):
        raise TypeError(f"exclude must be a path or None, got {type(exclude).__name__}")
    folder = Path(folder)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"submissions folder {str(folder)!r} {what}")
    skip = Path(exclude).resolve() if exclude is not None else None
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.is_symlink() or path.name.startswith(".") or path.resolve() == skip:
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

def _needed() -> list[Path]:
    """The folders the kernel needs, read-only: the interpreter, the environment, memcap, the book."""
    import memcap

    package = Path(memcap.__file__).resolve().parent
    paths = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent,
             package, package.parent / "book"]
    # site folders outside the environment (a system dist-packages, one named in a .pth file); never the
    # current folder or another folder that sys.path happens to hold
    paths += [Path(p).resolve() for p in sys.path if p and Path(p).name in ("site-packages", "dist-packages")]
    kept: list[Path] = []
    for path in sorted({p for p in paths if p.is_dir()}, key=lambda p: len(p.parts)):
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return kept


def _bwrap_argv(bwrap: str, copy: Path, run: Path, hidden: list[Path], limits: Limits) -> list[str]:
    """bubblewrap's command line for a kernel whose submission is the folder ``copy`` (read-only, copied
    into the private working folder by the launcher) and whose connection files are in ``run``."""
    root = os.geteuid() == 0
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--unshare-cgroup-try", "--clearenv", "--cap-drop", "ALL"]
    argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if root else ["--unshare-user"]
    needed = _needed()
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    size = str(limits.scratch)
    argv += ["--dev", "/dev", "--proc", "/proc",      # first: a folder mounted below may lie in /tmp
             "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
             "--perms", "0777", "--size", size, "--tmpfs", _HOME,
             "--perms", "0777", "--size", size, "--tmpfs", _WORK]
    argv += ["--ro-bind", "/usr", "/usr"]
    for path in ("/etc/ld.so.cache", "/etc/fonts", "/etc/localtime"):
        argv += ["--ro-bind-try", path, path]
    made: set[Path] = set()

    def parents(path: Path) -> list[str]:
        """Create the folders above a mount point readable by anyone (bubblewrap copies the host's
        modes, and a 0700 parent such as /root would lock the kernel's user out)."""
        out = []
        for parent in reversed(path.parents):
            if parent != Path("/") and parent not in made and parent != Path("/usr") and \
                    Path("/usr") not in parent.parents:
                made.add(parent)
                out += ["--perms", "0755", "--dir", str(parent)]
        return out

    for path in needed:
        argv += [*parents(path), "--ro-bind", str(path), str(path)]
    for folder in hidden:   # the submissions and results folders, where a mounted folder holds them
        folder = folder.resolve()
        if any(p == folder or p in folder.parents for p in [*needed, Path("/usr")]):
            argv += ["--tmpfs", str(folder)]
    argv += ["--ro-bind", str(copy), _INPUT, *parents(run), "--bind", str(run), str(run), "--chdir", _WORK]
    env = {"HOME": _HOME, "USER": "student", "LOGNAME": "student", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "MPLCONFIGDIR": f"{_HOME}/.matplotlib",
           "IPYTHONDIR": f"{_HOME}/.ipython", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return argv


def _process_limit(limits: Limits) -> int:
    """RLIMIT_NPROC for the kernel: it counts every process and thread of the kernel's user, so as root
    (the kernel becomes ``nobody``) it is the limit itself, and otherwise the limit above what the
    grading user already runs."""
    if os.geteuid() == 0:
        return limits.processes
    uid, running = str(os.getuid()), 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if fields.get("Uid", "").split()[:1] == [uid]:
            running += int(fields.get("Threads", "1").strip() or 1)
    return running + limits.processes


def _launcher(limits: Limits, copy_from: str | None) -> list[str]:
    argv = [sys.executable, "-m", "memcap.textbook._grading_kernel", "--memory", str(limits.memory),
            "--processes", str(_process_limit(limits)), "--file-size", str(limits.file_size),
            "--open-files", str(limits.open_files)]
    if copy_from:
        argv += ["--copy-from", copy_from]
    if os.geteuid() == 0 and copy_from:
        argv += ["--user", str(_NOBODY)]
    return argv


def sandbox_problem(bwrap: str | None = None) -> str | None:
    """Why the bubblewrap sandbox cannot run here (``None`` if it can): bubblewrap missing (``bwrap``:
    its path, default: found on ``PATH``), or a trial sandbox that does not start or cannot import
    memcap (no user namespaces, a folder it cannot mount, ...)."""
    if bwrap is not None and not isinstance(bwrap, str):
        raise TypeError(f"bwrap must be a path (a string) or None, got {type(bwrap).__name__}")
    bwrap = bwrap or shutil.which("bwrap")
    if not bwrap:
        return ("bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap); install it, or "
                "pass --sandbox none to grade unsandboxed (honour-system grades)")
    with tempfile.TemporaryDirectory(prefix="memcap-grade-probe-") as tmp:
        copy, run = Path(tmp) / "copy", Path(tmp) / "run"
        copy.mkdir()
        run.mkdir()
        probe = [*_bwrap_argv(bwrap, copy, run, [], Limits()), sys.executable, "-c",
                 "import memcap.textbook.exercises, ipykernel"]
        try:
            done = subprocess.run(probe, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"bubblewrap could not start a sandbox ({type(err).__name__}: {err})"
    if done.returncode != 0:
        why = " ".join((done.stderr.strip().splitlines() or ["no message"])[-1:])[:200]
        return (f"bubblewrap cannot start the grading sandbox here ({why}); fix that (user namespaces "
                "must be allowed, and Python, its packages and memcap must lie outside /tmp's own files), "
                "or pass --sandbox none to grade unsandboxed (honour-system grades)")
    return None


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


def _kernel_spec(spec_dir: Path, argv: list[str], env: dict[str, str]) -> None:
    folder = spec_dir / "memcap-grading"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": argv, "display_name": "memcap grading", "language": "python",
        "interrupt_mode": "message", "env": env}), encoding="utf-8")


# --- one notebook ----------------------------------------------------------------------------------

def _mark(cell: Any, text: str) -> None:
    """Add a ``[memcap grade: ...]`` line to a code cell's outputs, where the instructor will see it."""
    from nbformat.v4 import new_output

    if cell.get("cell_type") == "code":
        cell.setdefault("outputs", []).append(new_output("stream", name="stderr", text=f"[memcap grade: {text}]\n"))


def _out_of_memory(reply: dict) -> bool:
    """Whether an error reply is a failed allocation (Python's, NumPy's or torch's, or errno 12)."""
    return str(reply.get("ename")) in _MEMORY_ERRORS or "allocate memory" in str(reply.get("evalue"))


def _client_class():
    from nbclient import NotebookClient

    class LimitedClient(NotebookClient):
        """nbclient, keeping at most ``limits.max_output`` bytes of the student's cells' outputs, and
        noting in ``events`` each cell stopped by the cell timeout or a failed allocation and the cell
        from which output was dropped (``note`` adds a kernel's death or the notebook's timeout)."""

        limits = Limits()
        kept = 0
        truncated = False

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.events: list[Event] = []
            self.running: int = 0                 # the index of the cell being executed
            self.interrupted: int | None = None   # the index of the cell interrupted for its time
            self.on_cell_start = self._start
            self.on_cell_executed = self._executed

        def note(self, index: int, kind: str, message: str) -> None:
            self.events.append(Event(index + 1, kind, message))
            if kind != "output cut":
                _mark(self.nb.cells[index], message)

        def _start(self, cell: Any, cell_index: int) -> None:
            self.running = cell_index

        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            # nbclient's own handler (0.11) interrupts the kernel, after which the next cell runs
            self.interrupted = self.running
            return await super()._async_handle_timeout(timeout, cell)

        def _executed(self, cell: Any, cell_index: int, execute_reply: dict | None) -> None:
            reply = (execute_reply or {}).get("content", {})
            if reply.get("status") != "error":   # ran to its end (an interrupt it caught included)
                return
            if self.interrupted == cell_index:
                self.note(cell_index, "cell timeout",
                          f"cell {cell_index + 1} stopped after {self.limits.cell_timeout} s (--cell-timeout)")
            elif _out_of_memory(reply):
                ename = str(reply.get("ename"))[:80]
                what = ename if ename in _MEMORY_ERRORS else f"{ename}: cannot allocate memory"
                self.note(cell_index, "memory", f"cell {cell_index + 1} raised {what} "
                                                f"(--memory {self.limits.memory / 2**20:.0f} MiB)")

        def output(self, outs, msg, display_id, cell_index):
            size = len(json.dumps(msg.get("content", {})))
            if self.kept + size > self.limits.max_output:
                if not self.truncated:
                    self.truncated = True
                    self.note(cell_index, "output cut", f"output past {self.limits.max_output} bytes dropped "
                                                        f"from cell {cell_index + 1} on (--max-output)")
                    from nbformat.v4 import new_output

                    outs.append(new_output("stream", name="stderr", text=(
                        f"[memcap grade: output beyond {self.limits.max_output} bytes dropped]\n")))
                return None
            self.kept += size
            return super().output(outs, msg, display_id, cell_index)

    return LimitedClient


class _Kernel:
    """The grader's synchronous line to a running kernel, for ``memcap.textbook._grading_wire.Answers``."""

    def __init__(self, km: Any, timeout: Callable[[], float]) -> None:
        from jupyter_client.blocking import BlockingKernelClient

        self.km, self.timeout, self.gone = km, timeout, None
        self.client = BlockingKernelClient()
        self.client.load_connection_info(km.get_connection_info())
        self.client.start_channels(stdin=False, hb=False, control=False)   # alive() polls the process

    def alive(self) -> bool:
        process = getattr(self.km.provisioner, "process", None)
        return process is not None and process.poll() is None

    def ask(self, name: str, params: tuple) -> str:
        from queue import Empty

        from memcap.textbook._grading_wire import MIME, GradingStopped

        if self.gone:
            raise GradingStopped(self.gone)
        code = (f"import memcap.textbook._grading_wire as _memcap_wire\n"
                f"_memcap_wire.{name}({', '.join(map(repr, params))})")
        msg_id = self.client.execute(code, silent=False, store_history=False, allow_stdin=False,
                                     stop_on_error=False)
        limit = self.timeout()
        end = time.monotonic() + limit
        replies, error = [], None
        while True:
            left = end - time.monotonic()
            if left <= 0:
                self.gone = f"the kernel did not answer within {limit:.0f} s"
                raise GradingStopped(self.gone)
            try:
                msg = self.client.get_iopub_msg(timeout=min(left, 1.0))
            except Empty:
                if not self.alive():
                    self.gone = "the kernel died"
                    raise GradingStopped(self.gone) from None
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg.get("msg_type"), msg.get("content", {})
            if kind in ("display_data", "execute_result") and MIME in content.get("data", {}):
                replies.append(content["data"][MIME])
            elif kind == "error":
                error = f"{str(content.get('ename'))[:80]}: {str(content.get('evalue'))[:200]}"
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        if len(replies) != 1:
            why = f" ({error})" if error else ""
            raise GradingStopped(f"the kernel sent {len(replies)} answers instead of one{why}")
        return replies[0]

    def close(self) -> None:
        self.client.stop_channels()


class _CheckTimeout:
    """SIGALRM after ``seconds`` raises ``GradingStopped`` of ``memcap.textbook._grading_wire`` (main thread only)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.active = threading.current_thread() is threading.main_thread()

    def __enter__(self) -> None:
        if self.active:
            from memcap.textbook._grading_wire import GradingStopped

            def stop(signum, frame):
                raise GradingStopped(f"the check took longer than {self.seconds:.0f} s")

            self.previous = signal.signal(signal.SIGALRM, stop)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def _verdicts(kernel: _Kernel, labels: list[str], limits: Limits) -> dict[str, tuple[bool, str] | None]:
    """Check every exercise's answer in this process; the kernel only supplies answers and calls. An
    exercise the notebook never checked is ``None`` (see :func:`_settle`)."""
    from memcap.textbook._grading_wire import Answers, GradingStopped, NoAnswer, WireError
    from memcap.textbook.exercises import run_check

    answers, verdicts = Answers(kernel.ask), {}
    for label in labels:
        try:
            with _CheckTimeout(limits.cell_timeout):
                args, named = answers.answer(label)
                result = run_check(label, *args, **named)
            verdicts[label] = (result.passed, result.message)
        except NoAnswer:
            verdicts[label] = None
        except WireError as err:
            verdicts[label] = (False, f"malformed answer: {err}")
        except GradingStopped as err:
            verdicts[label] = (False, f"not graded: {err}")
    return verdicts


def _check_cells(nb: Any, labels: list[str]) -> dict[str, int]:
    """Exercise -> the position (from 1) of the first code cell that names it in quotes: where the
    notebook calls its ``check``."""
    import re

    found: dict[str, int] = {}
    for position, cell in enumerate(nb.cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        for label in labels:
            if label not in found and re.search(f"[\"']{re.escape(label)}[\"']", cell.get("source", "")):
                found[label] = position
    return found


def _settle(labels: list[str], verdicts: dict[str, tuple[bool, str] | None], events: list[Event],
            check_cells: dict[str, int]) -> dict[str, tuple[bool, str]]:
    """Each exercise's verdict: the checker's where the notebook answered; "not reached" where it did not
    and its ``check`` cell comes at or after a stopped cell (the last such stop is named); "no answer"
    where the notebook ran and never checked it; none (not graded) where the grader got no answers."""
    settled: dict[str, tuple[bool, str]] = {}
    for label in labels:
        verdict = verdicts.get(label)
        if verdict is not None:
            settled[label] = verdict
            continue
        cell = check_cells.get(label)
        stops = [e for e in events if e.stops and cell is not None and e.cell <= cell]
        if stops:
            settled[label] = (False, f"not reached: {stops[-1].message}")
        elif label in verdicts:
            settled[label] = (False, f'no answer: the notebook never called check("{label}", ...)')
    return settled


def _run_notebook(path: Path, labels: list[str], spec_dir: Path, run: Path, cwd: Path, limits: Limits,
                  log_file: Path, unprivileged: bool
                  ) -> tuple[Any, dict[str, tuple[bool, str]], str | None, list[Event]]:
    """Execute the notebook at ``path``, then grade its answers; return (notebook, verdicts, problem,
    events). With ``unprivileged``, the kernel becomes ``nobody``: its connection files are handed to
    that user."""
    import nbformat
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient.exceptions import DeadKernelError

    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # anything a broken file can raise
        return None, {}, f"not a readable notebook: {type(err).__name__}: {str(err)[:200]}", []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    km = AsyncKernelManager(kernel_name="memcap-grading", transport="ipc", ip=str(run / "kernel"),
                            connection_file=str(run / "kernel.json"),
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir)]))
    km.write_connection_file()
    if unprivileged:
        for item in (run, run / "kernel.json"):
            os.chown(item, _NOBODY, _NOBODY)
    client = _client_class()(nb, km=km, timeout=limits.cell_timeout, allow_errors=True,
                             interrupt_on_timeout=True, record_timing=False, shutdown_kernel="immediate",
                             skip_cells_with_tag="memcap-grade-never-skip",   # runs "skip-execution" cells
                             startup_timeout=min(120, limits.timeout))
    client.limits = limits
    deadline = time.monotonic() + limits.timeout
    outcome: dict[str, Any] = {"problem": None, "verdicts": {}}

    async def session() -> None:
        kernel = None
        try:
            with open(log_file, "wb") as log:
                async with client.async_setup_kernel(cwd=str(cwd), stdout=log, stderr=log):
                    async def cells() -> None:
                        for index, cell in enumerate(client.nb.cells):
                            await client.async_execute_cell(cell, index,
                                                            execution_count=client.code_cells_executed + 1)
                    try:
                        await asyncio.wait_for(cells(), max(1.0, deadline - time.monotonic()))
                    except Exception as err:   # nbclient reports the cancelled cell as a dead kernel
                        cell = client.running + 1
                        if time.monotonic() >= deadline:
                            kind = "notebook timeout"
                            where = (f"cell {cell} ran past {limits.cell_timeout} s (--cell-timeout) and "
                                     "ignored the interrupt" if client.interrupted == client.running
                                     else f"stopped in cell {cell}")
                            problem = f"the notebook did not finish within {limits.timeout} s (--timeout): {where}"
                        elif isinstance(err, DeadKernelError):
                            kind, problem = "dead kernel", f"the kernel died in cell {cell} (DeadKernelError)"
                        else:
                            raise
                        client.note(client.running, kind, problem)
                        outcome["problem"] = problem
                        return
                    kernel = _Kernel(km, lambda: max(1.0, min(limits.cell_timeout,
                                                              deadline + limits.cell_timeout - time.monotonic())))
                    outcome["verdicts"] = _verdicts(kernel, labels, limits)
        finally:
            if kernel is not None:
                kernel.close()
            if client.kc is not None:
                client.kc.stop_channels()
            if km.has_kernel:
                await km.shutdown_kernel(now=True)

    try:
        asyncio.run(session())
    except Exception as err:  # a dead kernel, a kernel that would not start, ...
        outcome["problem"] = outcome["problem"] or f"{type(err).__name__}: {str(err)[:200]}"
    finally:
        atexit.unregister(client._cleanup_kernel)
    verdicts = _settle(labels, outcome["verdicts"], client.events, _check_cells(nb, labels))
    return nb, verdicts, outcome["problem"], client.events


# --- the whole folder ------------------------------------------------------------------------------

def _safe_name(student: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in student).lstrip(".") or "student"


def grade_folder(submissions: str | Path, chapter: str, output: str | Path, *, cell_timeout: int = 120,
                 timeout: int = 900, max_output: int = 1_000_000, sandbox: str = "bwrap",
                 limits: Limits | None = None, log: Callable[[str], Any] = print) -> GradeReport:
    """Grade every notebook in ``submissions`` on the checked exercises of ``chapter``; write the CSV,
    the per-student JSON files, the summary and the executed notebooks into ``output``. ``limits``
    (optional) overrides the resource limits; ``cell_timeout``, ``timeout`` and ``max_output`` set
    its first three fields. Raises ``ValueError`` before grading anything when an argument is wrong or
    the sandbox cannot run (see the module docstring)."""
    from memcap.textbook.exercises import chapter_labels, registry

    if sandbox not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {SANDBOXES}, got {sandbox!r}")
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(f"limits must be a memcap.textbook.grading.Limits or None, got {type(limits).__name__}")
    if not callable(log):
        raise TypeError(f"log must be callable, got {type(log).__name__}")
    if not isinstance(output, (str, Path)):
        raise TypeError(f"output must be a path, got {type(output).__name__}")
    base = limits or Limits()
    limits = Limits(**{**vars(base), "cell_timeout": cell_timeout, "timeout": timeout,
                       "max_output": max_output})
    doc = resolve_chapter(chapter)
    labels = chapter_labels(doc)
    output = Path(output).resolve()
    if output.exists() and not output.is_dir():
        raise ValueError(f"output {str(output)!r} is a file, not a folder")
    if isinstance(submissions, (str, Path)) and Path(submissions).resolve() == output:
        raise ValueError(f"output {str(output)!r} is the submissions folder: its executed notebooks would be "
                         "graded as a student's at the next run; name another folder (one inside it is left out)")
    found = find_submissions(submissions, exclude=output)
    if sandbox == "bwrap":
        problem = sandbox_problem()
        if problem:
            raise ValueError(problem)
    else:
        log("warning: --sandbox none: the notebooks run unsandboxed as the grading user and can change "
            "its files, the checkers and the results; these grades are honour-system")
    registry()   # every checker is loaded before any notebook runs
    problem = _trial_kernel(sandbox, limits, output)
    if problem:
        raise ValueError(f"a trial kernel could not run a one-line notebook under these limits ({problem}); "
                         f"no notebook was graded: check --memory ({limits.memory / 2**20:.0f} MiB of address "
                         f"space per kernel process; importing torch alone takes about 700) and --processes "
                         f"({limits.processes})")
    report = GradeReport(doc, labels, sandbox=sandbox)
    start = time.perf_counter()
    for sub in ("notebooks", "students", "logs"):
        (output / sub).mkdir(parents=True, exist_ok=True)
    report.csv_path = output / "grades.csv"
    hidden = [Path(submissions), output]
    with open(report.csv_path, "w", newline="", encoding="utf-8") as handle, \
            tempfile.TemporaryDirectory(prefix="memcap-grade-") as tmp:
        writer = csv.DictWriter(handle, fieldnames=["student", "exercise", "result", "message", "events"])
        writer.writeheader()
        handle.flush()
        for k, (student, notebook) in enumerate(found.items()):
            t0 = time.perf_counter()
            rows, problem, events = _grade_student(student, notebook, Path(submissions), Path(tmp) / f"s{k}",
                                                   labels, sandbox, limits, hidden, output)
            report.rows += rows
            if problem:
                report.problems[student] = problem
            if events:
                report.events[student] = events
            writer.writerows(rows)
            handle.flush()
            score = sum(r["result"] == "pass" for r in rows)
            (output / "students" / f"{_safe_name(student)}.json").write_text(json.dumps(
                {"student": student, "chapter": doc, "score": score, "out_of": len(labels),
                 "sandbox": sandbox, "problem": problem,
                 "events": [{"cell": e.cell, "kind": e.kind, "message": e.message} for e in events],
                 "exercises": [{k: r[k] for k in ("exercise", "result", "message")} for r in rows]},
                indent=1) + "\n", encoding="utf-8")
            said = [e.message for e in events] or ([problem] if problem else [])
            log(f"{student}: {score}/{len(labels)} in {time.perf_counter() - t0:.0f} s"
                + (f" ({'; '.join(said)})" if said else ""))
    report.seconds = time.perf_counter() - start
    report.summary_path = output / "summary.txt"
    report.summary_path.write_text(report.summary() + "\n", encoding="utf-8")
    return report


TRIAL_SECONDS = 300
"""Seconds the trial kernel (see :func:`grade_folder`) has to start and import what chapters import, at least."""


def _trial_kernel(sandbox: str, limits: Limits, output: Path) -> str | None:
    """Run a notebook of one line (importing what every chapter imports) in a kernel started exactly as the
    students' will be: why it did not finish, or ``None``. Limits no kernel can start under (``--memory``
    in GiB instead of MiB, say) are then refused once, instead of giving every student 0. The trial tests the
    memory, process and file limits; its time is at least ``TRIAL_SECONDS`` whatever ``--cell-timeout`` and
    ``--timeout`` say (a one-second cell timeout is a fair limit for students' cells, not for importing torch
    on a loaded machine)."""
    from dataclasses import replace

    import nbformat

    limits = replace(limits, cell_timeout=max(limits.cell_timeout, TRIAL_SECONDS),
                     timeout=max(limits.timeout, TRIAL_SECONDS))

    with tempfile.TemporaryDirectory(prefix="memcap-grade-trial-") as tmp:
        folder = Path(tmp) / "submissions"
        folder.mkdir()
        notebook = folder / "trial.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "import matplotlib.pyplot, numpy, torch, memcap.textbook.exercises")]), notebook)
        logs = Path(tmp) / "output"
        (logs / "logs").mkdir(parents=True)
        (logs / "notebooks").mkdir()
        _, problem, _ = _grade_student("trial", notebook, folder, Path(tmp) / "private", [], sandbox, limits,
                                       [folder, *([output] if output.exists() else [])], logs)
        ran = logs / "notebooks" / "trial.ipynb"
        if problem is None and ran.exists():   # the cell's own error (allowed in students' notebooks)
            errors = [o for c in nbformat.read(ran, as_version=4).cells for o in c.get("outputs", [])
                      if o.get("output_type") == "error"]
            if errors:
                problem = f"{errors[0].get('ename')}: {str(errors[0].get('evalue'))[:200]}"
    return problem


def _grade_student(student: str, notebook: Path, submissions: Path, private: Path, labels: list[str],
                   sandbox: str, limits: Limits, hidden: list[Path],
                   output: Path) -> tuple[list[dict[str, str]], str | None, list[Event]]:
    """Grade one submission: its rows, why its notebook did not finish (``None`` if it did), what
    stopped or cut it. Never raises (a failure of any kind becomes the reason in its rows)."""
    import nbformat

    verdicts: dict[str, tuple[bool, str]] = {}
    events: list[Event] = []
    try:
        run, specs = private / "run", private / "kernels"
        run.mkdir(parents=True)
        copy = _copy_submission(notebook, private / "copy", whole_folder=notebook.parent != submissions)
        if sandbox == "bwrap":
            argv = [*_bwrap_argv(shutil.which("bwrap") or "bwrap", copy.parent, run, hidden, limits),
                    *_launcher(limits, _INPUT), "-f", "{connection_file}"]
            env = {}
        else:
            home = private / "home"
            home.mkdir()
            argv = [*_launcher(limits, None), "-f", "{connection_file}"]
            env = {"HOME": str(home), "TMPDIR": str(home), "MPLCONFIGDIR": str(home / ".matplotlib"),
                   "IPYTHONDIR": str(home / ".ipython"), "PYTHONDONTWRITEBYTECODE": "1"}
        _kernel_spec(specs, argv, env)
        nb, verdicts, problem, events = _run_notebook(copy, labels, specs, run, copy.parent, limits,
                                                      output / "logs" / f"{_safe_name(student)}.log",
                                                      unprivileged=sandbox == "bwrap" and os.geteuid() == 0)
        if nb is not None:
            nbformat.write(nb, output / "notebooks" / f"{_safe_name(student)}.ipynb")
    except Exception as err:  # the grader's own trouble with this submission: say so, go on
        problem = f"could not be graded: {type(err).__name__}: {str(err)[:200]}"
    finally:
        shutil.rmtree(private, ignore_errors=True)
    said = "; ".join(e.message for e in events)
    rows = []
    for label in labels:
        passed, message = verdicts.get(label) or (False, f"not graded: {problem or 'no verdict'}")
        rows.append({"student": student, "exercise": label, "result": "pass" if passed else "fail",
                     "message": message, "events": said})
    return rows, problem, events

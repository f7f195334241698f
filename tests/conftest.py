"""Shared fixtures: one strict build of the whole book serves the build, execution and browser tests.

The book is built once per test session into a fresh directory, with the same flags as the README's
build command (``--all -W -n --keep-going``): any warning, broken reference or cell error fails it.
The student edition is built once per session too (fixture ``student_site``; ``MEMCAP_STUDENT_SITE``
reuses one), side by side with the book's build (:class:`Builds`). Set ``MEMCAP_SITE=<dir containing
index.html>`` to reuse a site you have just built (handy while iterating on the browser tests); CI never
sets it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_FLAGS = ["--all", "-W", "-n", "--keep-going"]


def pytest_configure(config) -> None:
    """Register the ``gpu`` marker here (pyproject.toml belongs to the build setup)."""
    config.addinivalue_line("markers", "gpu: runs memcap on a second device (CUDA or MPS); skipped, with the "
                                       "reason, where there is none. `pytest -m gpu` runs only these.")


def require_system_tool(problem: str | None) -> None:
    """Skip the calling test when a system tool it needs (Chromium, bubblewrap) is missing or broken here:
    ``problem`` says which and how to install it (None: nothing is missing). In CI (``CI=true``), where
    ``.ci/run`` installs them, fail instead: a skipped browser or sandbox test there would hide a gap."""
    if problem is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{problem} (CI=true: .ci/run should have installed it)")
    pytest.skip(problem)


@pytest.fixture
def one_thread():
    """Run a test with one torch intra-op thread (tiny models run fastest so, and spin-waiting threads
    slow a shared 2-core CPU); the previous setting is restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@dataclass(frozen=True)
class BuiltSite:
    html: Path          # the folder holding index.html
    log: str            # everything the build printed
    returncode: int
    seconds: float


def build_book(output: Path, run: Callable[[list[str]], tuple[str, int]]) -> BuiltSite:
    """Run the strict build of the whole book into ``output`` (a fresh directory) with ``run``, which runs a
    command and returns (everything it printed, exit status)."""
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(ROOT), "--path-output", str(output), *BUILD_FLAGS]
    start = time.perf_counter()
    log, returncode = run(cmd)
    return BuiltSite(output / "_build" / "html", log, returncode, time.perf_counter() - start)


HEAVY = ("site", "site_pdf", "student_site")
"""The session fixtures behind which a whole build runs (each executes every chapter, or prints 433 pages)."""


class Builds:
    """The strict build of the book, its PDF and the student edition (with its PDF), each started in the
    background, in processes of its own, when the session first needs any of them, and together: a build
    executes the chapters one at a time on one core, so on the reference machine's 2 cores the book and the
    student edition build side by side (each about 1,000 s alone on 2026-11-29), the book's PDF after the book.

    Only what the collected tests use is built (their ``item.fixturenames``); one that a test asks for later
    starts then. Each fixture waits for its own build; a build that fails fails the tests that use it, with
    its output. Builds still running when the session ends (Ctrl-C) are stopped with their kernels.
    """

    def __init__(self, wanted: set[str], tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._pool = ThreadPoolExecutor(max_workers=len(HEAVY), thread_name_prefix="memcap-build")
        self._futures: dict[str, Future] = {}
        self._started: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._stopping = False
        self.seconds: dict[str, float] = {}
        for name in HEAVY:
            if name in wanted:
                self._future(name)

    def _future(self, name: str) -> Future:
        if name not in self._futures:
            if name == "site_pdf":
                self._future("site")
            # the PDF lands in the site's folder; a reused site is read where it is
            output = None if name == "site_pdf" or os.environ.get(_REUSE[name]) else self._tmp.mktemp(name)
            self._futures[name] = self._pool.submit(getattr(self, f"_make_{name}"), output)
        return self._futures[name]

    def get(self, name: str):
        """What fixture ``name`` holds, once built (waits for it)."""
        return self._future(name).result()

    def _run(self, cmd: list[str]) -> tuple[str, int]:
        with self._lock:
            if self._stopping:
                return "the session ended before this build started", -1
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
            self._started.append(proc)
        out, _ = proc.communicate()
        return out, proc.returncode

    def _python(self, code: str, what: str) -> None:
        log, returncode = self._run([sys.executable, "-c", code])
        if returncode != 0:
            raise RuntimeError(f"{what} failed (status {returncode}); its last output:\n{log[-6000:]}")

    def _make_site(self, output: Path | None) -> BuiltSite:
        if output is None:
            return BuiltSite(_reused("site"), "", 0, 0.0)
        built = build_book(output, self._run)
        self.seconds["site"] = built.seconds
        return built

    def _make_site_pdf(self, output: Path | None) -> Path:
        from memcap.textbook.pdf import PDF_NAME

        site = self.get("site")
        target = site.html / PDF_NAME
        if target.is_file():   # a site reused through MEMCAP_SITE may hold it already
            return target
        if site.returncode != 0:
            raise RuntimeError("the strict build of the book failed (tests/test_book.py says why): no PDF")
        start = time.perf_counter()
        self._python(f"from memcap.textbook.pdf import build_pdf; build_pdf({str(ROOT)!r}, "
                     f"{str(site.html.parent.parent)!r})", "the book's PDF")
        self.seconds["site_pdf"] = time.perf_counter() - start
        return target

    def _make_student_site(self, output: Path | None) -> Path:
        if output is None:
            return _reused("student_site")
        start = time.perf_counter()
        self._python("from memcap.textbook.edition import build_student_edition; "
                     f"build_student_edition({str(ROOT)!r}, {str(output)!r}, pdf=True)",
                     "the strict build of the student edition and its PDF")
        self.seconds["student_site"] = time.perf_counter() - start
        return output / "_build" / "html"

    def stop(self) -> None:
        """Stop every build still running (with the kernels it started) and wait for the threads."""
        with self._lock:
            self._stopping = True
            for proc in self._started:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
        self._pool.shutdown(wait=True, cancel_futures=True)


_REUSE = {"site": "MEMCAP_SITE", "site_pdf": "MEMCAP_SITE", "student_site": "MEMCAP_STUDENT_SITE"}
"""The environment variable naming an already built HTML folder that a fixture reuses."""


def _reused(name: str) -> Path:
    html = Path(os.environ[_REUSE[name]]).resolve()
    if not (html / "index.html").is_file():
        raise FileNotFoundError(f"{_REUSE[name]}={os.environ[_REUSE[name]]} holds no index.html")
    return html


@pytest.fixture(scope="session")
def builds(request, tmp_path_factory) -> Builds:
    """Starts every build the collected tests need (:class:`Builds`) the first time one of them is needed."""
    wanted = {name for item in request.session.items for name in HEAVY if name in item.fixturenames}
    started = Builds(wanted, tmp_path_factory)
    yield started
    started.stop()


@pytest.fixture(scope="session")
def site(builds) -> BuiltSite:
    """The strict build of the whole book (``MEMCAP_SITE`` reuses one)."""
    built = builds.get("site")
    print(f"\nstrict build of the whole book: {built.seconds:.0f} s (returncode {built.returncode})")
    return built


@pytest.fixture(scope="session")
def student_site(builds) -> Path:
    """The student edition, built once per session with the same strict flags as the book (its HTML
    folder); used by ``tests/test_edition.py`` and ``tests/test_instructor_browser.py``."""
    html = builds.get("student_site")
    print(f"\nstrict build of the student edition and its PDF: {builds.seconds.get('student_site', 0):.0f} s")
    return html


@pytest.fixture(scope="session")
def site_pdf(builds) -> Path:
    """The full book's PDF (``python -m memcap pdf``'s first half), printed once per session from the strict
    build into its HTML folder, where the download menu links it; ``tests/test_pdf.py`` reads it and
    ``tests/test_browser.py`` follows the link."""
    target = builds.get("site_pdf")
    print(f"\nthe book's PDF: {builds.seconds.get('site_pdf', 0):.0f} s")
    return target


def toc_files() -> list[str]:
    """Every document of ``_toc.yml``, as paths relative to the root without suffix."""
    from memcap.textbook.edition import toc_documents

    return toc_documents(ROOT)

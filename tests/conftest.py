"""Shared fixtures: one strict build of the whole book serves the build, execution and browser tests.

The book is built once per test session into a fresh directory, with the same flags as the README's
build command (``--all -W -n --keep-going``): any warning, broken reference or cell error fails it.
The student edition is built once per session too (fixture ``student_site``; ``MEMCAP_STUDENT_SITE``
reuses one). Set ``MEMCAP_SITE=<dir containing index.html>`` to reuse a site you have just built (handy while
iterating on the browser tests); CI never sets it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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


def build_book(output: Path) -> BuiltSite:
    """Run the strict build of the whole book into ``output`` (a fresh directory)."""
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(ROOT), "--path-output", str(output), *BUILD_FLAGS]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return BuiltSite(output / "_build" / "html", proc.stdout + proc.stderr, proc.returncode, seconds)


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> BuiltSite:
    reuse = os.environ.get("MEMCAP_SITE")
    if reuse:
        html = Path(reuse).resolve()
        if not (html / "index.html").is_file():
            raise FileNotFoundError(f"MEMCAP_SITE={reuse} holds no index.html")
        return BuiltSite(html, "", 0, 0.0)
    built = build_book(tmp_path_factory.mktemp("book"))
    print(f"\nstrict build of the whole book: {built.seconds:.0f} s (returncode {built.returncode})")
    return built


@pytest.fixture(scope="session")
def student_site(tmp_path_factory) -> Path:
    """The student edition, built once per session with the same strict flags as the book (its HTML
    folder); used by ``tests/test_edition.py`` and ``tests/test_instructor_browser.py``."""
    from memcap.textbook.edition import build_student_edition

    reuse = os.environ.get("MEMCAP_STUDENT_SITE")
    if reuse:
        html = Path(reuse).resolve()
        if not (html / "index.html").is_file():
            raise FileNotFoundError(f"MEMCAP_STUDENT_SITE={reuse} holds no index.html")
        return html
    start = time.perf_counter()
    html = build_student_edition(ROOT, tmp_path_factory.mktemp("student"), pdf=True)
    print(f"\nstrict build of the student edition and its PDF: {time.perf_counter() - start:.0f} s")
    return html


@pytest.fixture(scope="session")
def site_pdf(site) -> Path:
    """The full book's PDF (``python -m memcap pdf``'s first half), printed once per session from the strict
    build into its HTML folder, where the download menu links it; ``tests/test_pdf.py`` reads it and
    ``tests/test_browser.py`` follows the link."""
    from memcap.textbook.pdf import PDF_NAME, build_pdf

    target = site.html / PDF_NAME
    if not target.is_file():   # a site reused through MEMCAP_SITE may hold it already
        start = time.perf_counter()
        build_pdf(ROOT, site.html.parent.parent)
        print(f"\nthe book's PDF: {time.perf_counter() - start:.0f} s")
    return target


def toc_files() -> list[str]:
    """Every document of ``_toc.yml``, as paths relative to the root without suffix."""
    from memcap.textbook.edition import toc_documents

    return toc_documents(ROOT)

"""The session's heavy builds (tests/conftest.py::Builds): started together, only those wanted, reused where
``MEMCAP_SITE``/``MEMCAP_STUDENT_SITE`` name a built site, failures reported with their output, and stopped
with the session."""
from __future__ import annotations

import sys
import threading
import time

import pytest

from tests.conftest import Builds

SLEEP = [sys.executable, "-c", "import time; time.sleep(1)"]


@pytest.fixture
def no_reuse(monkeypatch):
    monkeypatch.delenv("MEMCAP_SITE", raising=False)
    monkeypatch.delenv("MEMCAP_STUDENT_SITE", raising=False)


def test_wanted_builds_start_together_and_others_do_not(tmp_path_factory, monkeypatch, no_reuse):
    ran: dict[str, tuple[float, float]] = {}

    def pretend(name):
        def make(self, output):
            start = time.perf_counter()
            log, status = self._run(SLEEP)
            assert status == 0, log
            ran[name] = (start, time.perf_counter())
            return output
        return make

    for name in ("site", "site_pdf", "student_site"):
        monkeypatch.setattr(Builds, f"_make_{name}", pretend(name))
    builds = Builds({"site", "student_site"}, tmp_path_factory)
    try:
        assert builds.get("site").name.startswith("site") and builds.get("student_site").name.startswith("student")
        assert set(ran) == {"site", "student_site"}                     # site_pdf was not wanted
        (a0, a1), (b0, b1) = ran["site"], ran["student_site"]
        assert max(a0, b0) < min(a1, b1), "the two builds did not overlap"
        builds.get("site_pdf")                                          # asked for later: starts then
        assert set(ran) == {"site", "student_site", "site_pdf"}
    finally:
        builds.stop()


def test_reused_sites_are_read_not_built(tmp_path, tmp_path_factory, monkeypatch):
    (tmp_path / "index.html").write_text("<html></html>")
    (tmp_path / "memcap-textbook.pdf").write_bytes(b"%PDF")
    monkeypatch.setenv("MEMCAP_SITE", str(tmp_path))
    monkeypatch.setenv("MEMCAP_STUDENT_SITE", str(tmp_path))
    monkeypatch.setattr(Builds, "_run", lambda self, cmd: pytest.fail(f"ran {cmd}"))
    builds = Builds(set(), tmp_path_factory)
    try:
        assert builds.get("site").html == tmp_path and builds.get("site").returncode == 0
        assert builds.get("student_site") == tmp_path
        assert builds.get("site_pdf") == tmp_path / "memcap-textbook.pdf"
    finally:
        builds.stop()


def test_a_reused_folder_without_a_site_is_an_error(tmp_path, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MEMCAP_STUDENT_SITE", str(tmp_path))
    builds = Builds(set(), tmp_path_factory)
    try:
        with pytest.raises(FileNotFoundError, match="MEMCAP_STUDENT_SITE=.* holds no index.html"):
            builds.get("student_site")
    finally:
        builds.stop()


def test_a_failed_build_says_what_it_printed(tmp_path_factory, no_reuse):
    builds = Builds(set(), tmp_path_factory)
    try:
        with pytest.raises(RuntimeError, match="(?s)the PDF failed \\(status 3\\).*chapter x broke"):
            builds._python("import sys; print('chapter x broke'); sys.exit(3)", "the PDF")
    finally:
        builds.stop()


def test_stop_ends_a_running_build_and_refuses_new_ones(tmp_path_factory, no_reuse):
    builds = Builds(set(), tmp_path_factory)
    result = {}
    waiting = threading.Thread(target=lambda: result.update(out=builds._run(
        [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"])))
    waiting.start()
    time.sleep(1.0)
    start = time.perf_counter()
    builds.stop()
    waiting.join(timeout=10)
    assert not waiting.is_alive() and time.perf_counter() - start < 10
    assert result["out"][1] < 0                                       # killed, not finished
    assert builds._run(SLEEP) == ("the session ended before this build started", -1)

"""``python -m memcap grade`` (``memcap.textbook.grading``): a folder of submissions in, a CSV of verdicts out.

The slow tests follow the instructors' guide: the chapter's notebook as the site offers it (with the
reference solutions: a right submission), the student edition's notebook with wrong answers typed in
(a wrong one), and a broken, malicious notebook (exception, output flood, network, deleting a sibling
submission and the results, writing into the repository), graded in one run through the command line.
"""
from __future__ import annotations

import csv
import subprocess
import uuid

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from memcap.__main__ import main
from memcap.textbook.edition import strip_solutions
from memcap.textbook.grading import find_submissions, resolve_chapter, sandbox_problem
from memcap.textbook.site import write_notebook
from tests.conftest import ROOT, require_system_tool

CHAPTER = "book/mahdavi/skip"


def test_chapters_are_found_by_any_unambiguous_name():
    for name in ("book/mahdavi/skip", "mahdavi/skip", "skip", "skip.md", "book/mahdavi/skip.md"):
        assert resolve_chapter(name) == CHAPTER
    with pytest.raises(ValueError, match="has no exercise with a checker; chapters with checkers: .*mahdavi/skip"):
        resolve_chapter("book/dana/nowhere")


def test_submissions_are_notebooks_or_folders_with_one_notebook(tmp_path):
    nbformat.write(new_notebook(), tmp_path / "alice.ipynb")
    (tmp_path / "bob").mkdir()
    nbformat.write(new_notebook(), tmp_path / "bob" / "work.ipynb")
    (tmp_path / "bob" / "data.txt").write_text("kept")
    (tmp_path / "carol").mkdir()                                   # no notebook: not a submission
    (tmp_path / "notes.txt").write_text("not a notebook")
    assert find_submissions(tmp_path) == {"alice": tmp_path / "alice.ipynb", "bob": tmp_path / "bob" / "work.ipynb"}
    nbformat.write(new_notebook(), tmp_path / "bob.ipynb")
    with pytest.raises(ValueError, match="two submissions of 'bob'"):
        find_submissions(tmp_path)
    (tmp_path / "bob.ipynb").unlink()
    with pytest.raises(ValueError, match="no notebook in"):
        find_submissions(tmp_path / "carol")
    with pytest.raises(ValueError, match="does not exist"):
        find_submissions(tmp_path / "nowhere")


@pytest.mark.parametrize("argv, message", [
    (["grade", "NOWHERE", "--chapter", "skip"], "does not exist"),
    (["grade", ".", "--chapter", "no-such-chapter"], "has no exercise with a checker"),
])
def test_argument_errors_exit_2_with_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_missing_chapter_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["grade", "."])
    assert stop.value.code == 2 and "--chapter" in capsys.readouterr().err


# --- grading real notebooks (slow: each runs the chapter in a kernel) ---------------------------------

@pytest.fixture(scope="module")
def bubblewrap():
    """The sandbox the guarantees below depend on: skipped without it, naming the problem (failed with
    CI=true; .ci/run installs bubblewrap)."""
    problem = sandbox_problem()
    require_system_tool(problem and f"grading tests need a working bubblewrap sandbox: {problem}")


def _student_notebook(target):
    """The student edition's notebook of the chapter (solutions stripped, as the student site offers it)."""
    stripped = target.with_suffix(".md")
    stripped.write_text(strip_solutions((ROOT / f"{CHAPTER}.md").read_text(encoding="utf-8")), encoding="utf-8")
    write_notebook(stripped, target)
    stripped.unlink()
    return nbformat.read(target, as_version=4)


MALICIOUS = """\
import os, shutil, socket
here = os.getcwd()
print('sees the other submissions:', os.path.exists({bob!r}))
for target in [os.path.join(here, '..', 'bob'), {bob!r}, {output!r}, {alice!r}]:
    shutil.rmtree(target, ignore_errors=True)
    if os.path.isfile(target):
        os.remove(target)
try:
    open({canary!r}, 'w').write('escaped')
except OSError as err:
    print('write refused:', type(err).__name__)
try:
    socket.create_connection(('192.0.2.1', 80), timeout=2)
except OSError as err:
    print('network refused:', type(err).__name__)
"""


@pytest.mark.slow
def test_a_folder_of_three_submissions_is_graded(tmp_path, bubblewrap, capsys):
    subs, out = tmp_path / "submissions", tmp_path / "grades"
    subs.mkdir()
    canary = ROOT / "memcap-grading-canary.txt"
    # right: the chapter's notebook with its reference solutions, as the full site offers it
    write_notebook(ROOT / f"{CHAPTER}.md", subs / "alice.ipynb")
    # wrong: the student notebook, a wrong y' typed in, the function left unwritten; in a folder with data
    (subs / "bob").mkdir()
    wrong = _student_notebook(subs / "bob" / "skip.ipynb")
    starters = [c for c in wrong.cells if c.cell_type == "code" and "check(" in c.source]
    assert len(starters) == 2 and "skip-execution" in starters[0].metadata["tags"]
    starters[0].source = starters[0].source.replace("y_prime = ...", "y_prime = (1.5, -1.5)")
    nbformat.write(wrong, subs / "bob" / "skip.ipynb")
    (subs / "bob" / "notes.txt").write_text("my notes")
    # broken and malicious
    nbformat.write(new_notebook(cells=[
        new_code_cell(MALICIOUS.format(bob=str(subs / "bob"), output=str(out), alice=str(subs / "alice.ipynb"),
                                       canary=str(canary))),
        new_code_cell("print('y' * 100_000)\nprint('z' * 2_000_000)"),
        new_code_cell("raise RuntimeError('broken notebook')"),
        new_code_cell("from memcap.exercises import check\ncheck('ex-mahdavi-skip-2', [0, 0])"),
    ]), subs / "mallory.ipynb")
    out.mkdir()
    (out / "keep.txt").write_text("results of an earlier run")

    code = main(["grade", str(subs), "--chapter", "mahdavi/skip", "--output", str(out),
                 "--cell-timeout", "300", "--timeout", "600", "--max-output", "200000"])
    summary = capsys.readouterr().out
    assert code == 0
    assert not canary.exists(), "a graded notebook wrote into the repository"
    assert (subs / "bob" / "skip.ipynb").is_file() and (subs / "alice.ipynb").is_file()
    assert (out / "keep.txt").is_file()
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {(r["student"], r["exercise"]): r for r in csv.DictReader(handle)}
    assert len(rows) == 6
    assert rows["alice", "ex-mahdavi-skip-2"]["result"] == rows["alice", "ex-mahdavi-skip-3"]["result"] == "pass"
    assert rows["bob", "ex-mahdavi-skip-2"]["result"] == "fail"
    assert "adds the skip term" in rows["bob", "ex-mahdavi-skip-2"]["message"]
    assert "should return the second layer's weights" in rows["bob", "ex-mahdavi-skip-3"]["message"]
    assert rows["mallory", "ex-mahdavi-skip-2"]["result"] == "fail"
    assert "never called check" in rows["mallory", "ex-mahdavi-skip-3"]["message"]
    assert "alice: 2/2" in summary and "bob: 0/2" in summary and "mallory: 0/2" in summary
    assert "sandbox: bwrap" in summary and (out / "summary.txt").read_text() in summary + "\n"
    executed = nbformat.read(out / "notebooks" / "mallory.ipynb", as_version=4)
    texts = [o.get("text", "") + o.get("evalue", "") for c in executed.cells for o in c.get("outputs", [])]
    assert any("write refused" in t for t in texts) and any("network refused" in t for t in texts)
    assert any("sees the other submissions: False" in t for t in texts)
    assert any("output beyond 200000 bytes dropped" in t for t in texts)
    assert any("broken notebook" in t for t in texts)
    assert sum(map(len, texts)) < 300_000


@pytest.mark.slow
def test_a_notebook_that_ignores_interrupts_is_stopped_and_the_others_graded(tmp_path, bubblewrap):
    subs = tmp_path / "submissions"
    subs.mkdir()
    marker = f"600.{uuid.uuid4().int % 10 ** 9:09d}"   # sleep's argument: a command line only this test has
    nbformat.write(new_notebook(cells=[new_code_cell(
        f"import signal, subprocess\nsubprocess.Popen(['sleep', '{marker}'])\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass")]), subs / "loop.ipynb")
    nbformat.write(new_notebook(cells=[new_code_cell("import os\nos._exit(3)")]), subs / "crash.ipynb")
    nbformat.write(new_notebook(cells=[new_code_cell(
        "from memcap.exercises import check\ncheck('ex-mahdavi-skip-2', (-0.5, 2.5))")]), subs / "zoe.ipynb")
    (subs / "garbage.ipynb").write_text("{ not a notebook")
    from memcap.textbook.grading import grade_folder

    report = grade_folder(subs, "skip", tmp_path / "out", cell_timeout=25, timeout=35, log=lambda line: None)
    verdicts = {(r["student"], r["exercise"]): r for r in report.rows}
    assert verdicts["zoe", "ex-mahdavi-skip-2"]["result"] == "pass"
    assert "did not finish within 35 s" in verdicts["loop", "ex-mahdavi-skip-2"]["message"]
    assert "not a readable notebook" in verdicts["garbage", "ex-mahdavi-skip-2"]["message"]
    assert verdicts["crash", "ex-mahdavi-skip-2"]["result"] == "fail"
    assert set(report.problems) == {"loop", "crash", "garbage"}
    alive = subprocess.run(["pgrep", "-f", "-x", "sleep " + marker.replace(".", "\\.")], capture_output=True,
                           text=True).stdout
    assert not alive.strip(), "a process started by a graded notebook outlived the grading"


def test_bad_arguments_are_refused_naming_them(tmp_path):
    from memcap.textbook.grading import Limits, grade_folder

    with pytest.raises(ValueError, match="sandbox must be one of"):
        grade_folder(tmp_path, "skip", tmp_path / "out", sandbox="auto")
    with pytest.raises(TypeError, match="limits must be"):
        grade_folder(tmp_path, "skip", tmp_path / "out", limits={"memory": 1})
    with pytest.raises(ValueError, match="cell_timeout must be a positive integer"):
        grade_folder(tmp_path, "skip", tmp_path / "out", cell_timeout=0)
    with pytest.raises(ValueError, match="memory must be a positive integer"):
        Limits(memory=-1)
    with pytest.raises(ValueError, match=r"memory must be at most \d+, got 18446744073709551616"):
        Limits(memory=2**64)
    with pytest.raises(TypeError, match="chapter must be a string"):
        resolve_chapter(3)
    with pytest.raises(TypeError, match="folder must be a path"):
        find_submissions(3)
    with pytest.raises(TypeError, match="bwrap must be a path"):
        sandbox_problem(bwrap=1)


def test_the_sandbox_mounts_only_what_the_kernel_needs(tmp_path):
    """The bubblewrap command line: no whole-disk mount, an empty environment, no network, no
    capabilities, a process namespace that dies with the grader; submissions or results inside a
    mounted folder are hidden (``grade book/...``), and the submissions folder never becomes a mount."""
    from memcap.textbook.grading import Limits, _bwrap_argv, _needed

    inside = ROOT / "book" / "submissions-of-a-course"
    argv = _bwrap_argv("bwrap", tmp_path / "copy", tmp_path / "run", [inside, tmp_path / "out"], Limits())
    pairs = list(zip(argv, argv[1:]))
    assert ("--ro-bind", "/") not in pairs and ("--bind", "/") not in pairs
    for flag in ("--clearenv", "--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert ("--cap-drop", "ALL") in pairs
    assert ("--tmpfs", str(inside)) in pairs and ("--tmpfs", str(tmp_path / "out")) not in pairs
    mounted = {b for a, b in pairs if a in ("--ro-bind", "--bind")}
    assert mounted == {*map(str, _needed()), "/usr", str(tmp_path / "copy"), str(tmp_path / "run")}
    assert not any("PYTHONPATH" in a for a in argv)


def test_limits_no_kernel_can_start_under_are_refused_once_instead_of_failing_every_student(tmp_path, capsys):
    """--memory 4 (GiB meant): a trial kernel fails, and the command says so and exits 2 before grading,
    instead of writing 0 for every student. (Between about 128 and 700 MiB a kernel may or may not start,
    depending on how its libraries land in the address space: there the students' notebooks fail with
    MemoryError, which their grades say.)"""
    memory_mib = 4
    subs = tmp_path / "subs"
    subs.mkdir()
    write_notebook(ROOT / f"{CHAPTER}.md", subs / "alice.ipynb")
    code = main(["grade", str(subs), "--chapter", CHAPTER.split("/")[-1], "--output", str(tmp_path / "out"),
                 "--sandbox", "none", "--memory", str(memory_mib), "--timeout", "60"])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("warning: --sandbox none")]
    assert code == 2, err
    assert len(err) == 1 and "a trial kernel could not run a one-line notebook under these limits" in err[0]
    assert f"check --memory ({memory_mib} MiB" in err[0]
    assert not (tmp_path / "out" / "grades.csv").exists()


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_trial_kernel_runs_under_the_default_limits_and_under_the_shortest_timeouts(tmp_path):
    """The trial tests memory and processes, not time: under --cell-timeout 1 --timeout 1 (fair limits
    for students' cells) it still has TRIAL_SECONDS to import torch (CI of stop 44 failed a grade with
    --cell-timeout 3 on a loaded machine). The grader's own line to the kernel starts no heartbeat thread:
    one started and stopped at once (the trial checks no exercise) raised ZMQError in that thread."""
    from memcap.textbook.grading import Limits, _trial_kernel

    assert _trial_kernel("none", Limits(timeout=120), tmp_path / "out") is None
    assert _trial_kernel("none", Limits(cell_timeout=1, timeout=1), tmp_path / "out") is None

"""Submissions that attack ``python -m memcap grade``, graded in one run beside honest ones.

Each attacker is a small notebook on the exercises of ``book/mahdavi/skip``: it patches the checkers,
forges verdicts, answers garbage, looks for the grader's secrets, forks, allocates, leaves processes
behind and opens sockets. Every one must be graded failed (or refused) with a reason, while the honest
submissions of the same run keep full marks, and nothing of the grader's machine may reach the
notebooks handed back. The run needs bubblewrap (CI installs it); without it the grader must refuse,
which the fast tests at the end check without starting a kernel.
"""
from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import threading
import uuid

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from memcap.__main__ import main
from memcap.textbook.grading import Limits, grade_folder, sandbox_problem
from tests.conftest import require_system_tool

SECRET = "memcap-test-secret-4417"

HONEST = """\
import torch
from memcap.construct import mahdavi_limits as ml
from memcap.construct.mahdavi import memorize
from memcap.exercises import check


def second_layer(contexts, queries, labels, first_layer, heads, head_dim):
    contexts_r, queries_r = ml.apply_self_attention(first_layer, contexts, queries)
    return memorize(contexts_r, queries_r, labels, heads=heads, head_dim=head_dim,
                    generator=torch.Generator().manual_seed(7))


check("ex-mahdavi-skip-2", (-0.5, 2.5))
check("ex-mahdavi-skip-3", second_layer)
"""

WRONG = "from memcap.exercises import check\ncheck('ex-mahdavi-skip-2', (0.0, 0.0))\n"

RUN = f"{uuid.uuid4().int % 10 ** 9:09d}"
"""This run's marker: the attackers sleep 7771.RUN, 7772.RUN, 7773.RUN seconds, a command line no other
process on the machine has, so a process found by it is one a graded notebook started."""

PATCH_CHECKER = WRONG + """\
import memcap.textbook.exercises as ex, memcap.textbook.exercises.checking as ch
forged = lambda label, *a, **k: ex.Result(label, True, "1 case")
ex.run_check = ch.run_check = forged
ex.grade = lambda label: {"exercise": label, "passed": True, "message": "1 case"}
for entry in ch.registry().values():
    entry.function.__code__ = (lambda *a, **k: None).__code__
try:
    open(ch.__file__, "a").write("\\n# patched")
except OSError as err:
    print("checker file:", type(err).__name__)
check("ex-mahdavi-skip-3", lambda *a: None)
"""

FORGED = WRONG + """\
import json, sys, types
from IPython.display import display
verdict = {"exercise": "ex-mahdavi-skip-2", "passed": True, "message": "2 cases"}
print("MEMCAP-GRADE " + json.dumps(verdict))
display({"application/x-memcap-answer": json.dumps({"answer": {"args": [[-0.5, 2.5]], "named": {}}})},
        raw=True)
fake = types.ModuleType("memcap.textbook._grading_wire")
fake.export = lambda label: print("MEMCAP-GRADE " + json.dumps(verdict))
fake.invoke = fake.export
sys.modules["memcap.textbook._grading_wire"] = fake
"""

GARBAGE = """\
import sys, types
from IPython.display import display
fake = types.ModuleType("memcap.textbook._grading_wire")
replies = iter(['not json {', '{"answer": {"args": [{"$": "record", "type": "os.system", "fields": {}}],'
                ' "named": {}}}'])
fake.export = lambda label: display({"application/x-memcap-answer": next(replies)}, raw=True)
sys.modules["memcap.textbook._grading_wire"] = fake
print("\\x00\\xff garbage \\ud800".encode("utf-8", "surrogatepass"))
"""

SNOOP = WRONG + """\
import os, pathlib, sys
print("sys.path:", sys.path, "cwd:", os.getcwd(), sorted(os.listdir(".")))
print("environment:", sorted(os.environ))
print("secret in environment:", "MEMCAP_TEST_SECRET" in os.environ)
for path in [{home!r}, {other!r}, {output!r}, "/root", os.path.expanduser("~")]:
    try:
        print(path, "->", sorted(os.listdir(path))[:20])
    except OSError as err:
        print(path, "->", type(err).__name__)
try:
    print(open({secret_file!r}).read())
except OSError as err:
    print("secret file:", type(err).__name__)
"""

FORK = """\
import subprocess
children = []
try:
    for _ in range(500):
        children.append(subprocess.Popen(["sleep", "7771.""" + RUN + """"]))
except OSError as err:
    print("stopped after", len(children), "processes:", type(err).__name__)
""" + WRONG

ALLOCATE = """\
blocks = []
try:
    while True:
        blocks.append(bytearray(64 * 2**20))
except MemoryError:
    print("refused after", len(blocks) * 64, "MiB")
del blocks
""" + WRONG

BACKGROUND = """\
import os, subprocess
subprocess.Popen(["sleep", "7772.""" + RUN + """"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "7773.""" + RUN + """"])
    os._exit(0)
""" + WRONG

SOCKETS = WRONG + """\
import _socket, socket, subprocess, sys
target = ("127.0.0.1", {port})
try:
    socket.create_connection(target, timeout=2)
    print("socket.socket: connected")
except OSError as err:
    print("socket.socket:", type(err).__name__)
try:
    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    raw.settimeout(2)
    raw.connect(target)
    print("_socket: connected")
except OSError as err:
    print("_socket:", type(err).__name__)
code = "import _socket; s = _socket.socket(); s.settimeout(2); s.connect(('127.0.0.1', {port}))"
print("subprocess:", subprocess.run([sys.executable, "-c", code], capture_output=True).returncode)
"""

CRASH = "import os\nos._exit(3)\n"


class _Listener:
    """A TCP server on the grader's loopback that counts connections (none may arrive)."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.server.settimeout(0.2)
        self.port, self.connections, self.stop = self.server.getsockname()[1], 0, False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop:
            try:
                self.server.accept()[0].close()
                self.connections += 1
            except OSError:
                pass

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.server.close()


def _write(folder, name, source):
    nbformat.write(new_notebook(cells=[new_code_cell(source)]), folder / f"{name}.ipynb")


def _alive(command: str) -> bool:
    """Whether a process runs whose whole command line is ``command`` (``pgrep -f -x``, dots literal)."""
    pattern = command.replace(".", "\\.")
    return bool(subprocess.run(["pgrep", "-f", "-x", pattern], capture_output=True, text=True).stdout.strip())


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """One grading run of every attacker beside two honest students; the grader's environment holds a
    secret and its home a secret file."""
    problem = sandbox_problem()
    require_system_tool(problem and f"the attack tests need a working bubblewrap sandbox: {problem}")
    root = tmp_path_factory.mktemp("attacks")
    subs, out, home = root / "submissions", root / "grades", root / "home"
    subs.mkdir()
    home.mkdir()
    (home / "secret.txt").write_text(SECRET)
    listener = _Listener()
    for name, source in [("alice", HONEST), ("zoe", HONEST), ("patcher", PATCH_CHECKER), ("forger", FORGED),
                         ("garbage", GARBAGE), ("fork", FORK), ("allocate", ALLOCATE),
                         ("background", BACKGROUND), ("sockets", SOCKETS.format(port=listener.port)),
                         ("crash", CRASH)]:
        _write(subs, name, source)
    _write(subs, "snoop", SNOOP.format(home=str(home), other=str(subs / "alice.ipynb"),
                                       output=str(out), secret_file=str(home / "secret.txt")))
    saved = {k: os.environ.get(k) for k in ("HOME", "MEMCAP_TEST_SECRET")}
    os.environ.update(HOME=str(home), MEMCAP_TEST_SECRET=SECRET)
    here = os.getcwd()
    os.chdir(subs)        # `grade .`: the submissions folder is the current folder
    try:
        report = grade_folder(".", "skip", out, cell_timeout=60, timeout=90,
                              limits=Limits(memory=3 * 2**30, processes=96), log=lambda line: None)
    finally:
        os.chdir(here)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        listener.close()
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {(r["student"], r["exercise"]): r for r in csv.DictReader(handle)}
    notebooks = {path.stem: path.read_text(encoding="utf-8") for path in (out / "notebooks").glob("*.ipynb")}
    return report, rows, notebooks, listener, out, subs


def _score(rows, student):
    return sum(r["result"] == "pass" for (s, _), r in rows.items() if s == student)


def _printed(notebooks, student):
    nb = nbformat.reads(notebooks[student], as_version=4)
    return "".join(o.get("text", "") + o.get("evalue", "") for c in nb.cells for o in c.get("outputs", []))


@pytest.mark.slow
def test_honest_submissions_keep_their_grades_beside_the_attackers(attacked):
    report, rows, _, _, out, _ = attacked
    assert _score(rows, "alice") == _score(rows, "zoe") == 2
    assert len(rows) == 2 * 11
    assert {r["student"] for r in report.rows} == {s for s, _ in rows}
    for student in ("alice", "zoe", "patcher"):
        assert json.loads((out / "students" / f"{student}.json").read_text())["score"] == _score(rows, student)


@pytest.mark.slow
@pytest.mark.parametrize("student", ["patcher", "forger", "garbage", "snoop", "fork", "allocate", "background",
                                     "sockets", "crash"])
def test_every_attacker_gets_zero(attacked, student):
    _, rows, *_ = attacked
    assert _score(rows, student) == 0, {k: v for k, v in rows.items() if k[0] == student}


@pytest.mark.slow
def test_patching_the_checkers_or_forging_a_verdict_changes_nothing(attacked):
    _, rows, notebooks, *_ = attacked
    assert "the coordinate is too large" in rows["patcher", "ex-mahdavi-skip-2"]["message"]
    assert "should return the second layer's weights" in rows["patcher", "ex-mahdavi-skip-3"]["message"]
    assert "checker file: OSError" in _printed(notebooks, "patcher") or \
        "checker file: PermissionError" in _printed(notebooks, "patcher")
    assert rows["forger", "ex-mahdavi-skip-2"]["result"] == "fail"
    assert "MEMCAP-GRADE" in _printed(notebooks, "forger")     # printed, and ignored


@pytest.mark.slow
def test_garbage_answers_fail_with_a_reason(attacked):
    _, rows, *_ = attacked
    messages = [rows["garbage", label]["message"] for label in ("ex-mahdavi-skip-2", "ex-mahdavi-skip-3")]
    assert any("malformed reply" in m and "not JSON" in m for m in messages), messages
    assert any("malformed answer" in m and "os.system" in m for m in messages), messages


@pytest.mark.slow
def test_a_crashing_kernel_fails_only_its_own_student(attacked):
    report, rows, *_ = attacked
    assert "crash" in report.problems
    assert rows["crash", "ex-mahdavi-skip-2"]["message"].startswith("not graded:")
    assert set(report.problems) <= {"crash", "fork", "allocate"}, report.problems


@pytest.mark.slow
def test_nothing_of_the_graders_machine_reaches_the_notebooks(attacked):
    _, _, notebooks, _, _, subs = attacked
    assert all(SECRET not in text for text in notebooks.values())      # sources and outputs
    printed = _printed(notebooks, "snoop")
    assert "secret in environment: False" in printed and "MEMCAP_TEST_SECRET" not in printed
    assert "secret file: FileNotFoundError" in printed
    assert "alice.ipynb -> FileNotFoundError" in printed and "secret.txt" not in printed
    assert str(subs) not in printed.split("environment:")[0]          # not on sys.path, not the cwd
    assert "cwd: /submission ['snoop.ipynb']" in printed


@pytest.mark.slow
def test_processes_memory_and_sockets_are_contained(attacked):
    _, _, notebooks, listener, *_ = attacked
    assert "stopped after" in _printed(notebooks, "fork")
    assert "refused after" in _printed(notebooks, "allocate")
    printed = _printed(notebooks, "sockets")
    assert "socket.socket: PermissionError" in printed and "_socket: connected" not in printed
    assert "subprocess: 0" not in printed
    assert listener.connections == 0
    assert not any(_alive(f"sleep 777{k}.{RUN}") for k in (1, 2, 3)), "a graded notebook's process outlived it"


# --- without a sandbox (fast: no kernel starts) ----------------------------------------------------

def test_without_bubblewrap_grading_refuses_with_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "subs").mkdir()
    _write(tmp_path / "subs", "zoe", WRONG)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["grade", str(tmp_path / "subs"), "--chapter", "skip", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bubblewrap is not installed" in err and "--sandbox none" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("which", ["submissions", "output"])
def test_paths_that_are_files_exit_2_with_one_line(tmp_path, capsys, which):
    (tmp_path / "subs").mkdir()
    _write(tmp_path / "subs", "zoe", WRONG)
    (tmp_path / "file.txt").write_text("a file")
    subs = tmp_path / ("file.txt" if which == "submissions" else "subs")
    out = tmp_path / ("file.txt" if which == "output" else "out")
    assert main(["grade", str(subs), "--chapter", "skip", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a folder" in err
    assert not (tmp_path / "out").exists() and (tmp_path / "file.txt").read_text() == "a file"


@pytest.mark.slow
def test_sandbox_none_grades_and_says_honour_system(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    _write(tmp_path / "subs", "zoe", "from memcap.exercises import check\ncheck('ex-mahdavi-skip-2', (-0.5, 2.5))")
    assert main(["grade", str(tmp_path / "subs"), "--chapter", "skip", "--output", str(tmp_path / "out"),
                 "--sandbox", "none", "--timeout", "60"]) == 0
    captured = capsys.readouterr()
    assert "honour-system" in captured.out and "zoe: 1/2" in captured.out and "honour-system" in captured.err

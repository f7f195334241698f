"""What stopped a graded notebook is said in its grades (``memcap.textbook.grading``'s events).

A cell stopped by ``--cell-timeout``, a ``MemoryError`` under ``--memory``, output dropped past
``--max-output``, a kernel that died and a notebook stopped by ``--timeout``: each appears in the
``events`` column of ``grades.csv``, the student's JSON and ``summary.txt``, and the exercises the stop
cut off are "not reached", while one the notebook never attempted keeps "no answer". The slow tests
grade real notebooks in the bubblewrap sandbox through the command line; the fast ones check the rule
that turns events into verdicts.
"""
from __future__ import annotations

import csv
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from memcap.__main__ import main
from memcap.textbook.grading import Event, _check_cells, _settle, sandbox_problem
from tests.conftest import require_system_tool

EX2, EX3 = "ex-mahdavi-skip-2", "ex-mahdavi-skip-3"
NO_ANSWER = 'no answer: the notebook never called check("{}", ...)'


# --- the rule (fast: no kernel) ----------------------------------------------------------------------

def test_check_cells_are_where_a_label_is_named_in_quotes():
    nb = new_notebook(cells=[new_markdown_cell(f"Exercise '{EX2}'"), new_code_cell("x = 1"),
                             new_code_cell(f"check('{EX2}', x)"),
                             new_code_cell(f'check("{EX2}", x)\ncheck("{EX3}", f)'),
                             new_code_cell("check('ex-mahdavi-skip-20', 1)")])
    assert _check_cells(nb, [EX2, EX3, "ex-mahdavi-skip-20", "ex-mahdavi-skip-9"]) == {
        EX2: 3, EX3: 4, "ex-mahdavi-skip-20": 5}


def test_unanswered_exercises_after_a_stop_are_not_reached():
    stop = Event(3, "cell timeout", "cell 3 stopped after 3 s (--cell-timeout)")
    later = Event(5, "memory", "cell 5 raised MemoryError (--memory 3072 MiB)")
    labels = ["a", "b", "c", "d", "e"]
    verdicts = {"a": (True, "2 cases"), "b": None, "c": None, "d": None, "e": (False, "wrong")}
    settled = _settle(labels, verdicts, [stop, later], {"a": 4, "b": 2, "c": 3, "d": 6, "e": 7})
    assert settled == {"a": (True, "2 cases"),                        # answered: the checker's verdict
                       "b": (False, NO_ANSWER.format("b")),            # its cell ran before the stop
                       "c": (False, f"not reached: {stop.message}"),   # checked in the stopped cell
                       "d": (False, f"not reached: {later.message}"),  # the last stop before its cell
                       "e": (False, "wrong")}


def test_an_output_cut_stops_nothing_and_no_answers_means_not_graded():
    cut = Event(2, "output cut", "output past 2000 bytes dropped from cell 2 on (--max-output)")
    assert not cut.stops and Event(2, "dead kernel", "the kernel died in cell 2 (DeadKernelError)").stops
    assert _settle(["a"], {"a": None}, [cut], {"a": 3}) == {"a": (False, NO_ANSWER.format("a"))}
    died = Event(2, "dead kernel", "the kernel died in cell 2 (DeadKernelError)")
    # a dead kernel leaves no answers: exercises before it are left to "not graded", after it not reached
    assert _settle(["a", "b", "c"], {}, [died], {"a": 1, "b": 2}) == {"b": (False, f"not reached: {died.message}")}


# --- real notebooks in the sandbox (slow: each starts a kernel) ---------------------------------------

IMPORT = "from memcap.exercises import check\n"
RIGHT = IMPORT + f"check('{EX2}', (-0.5, 2.5))"

# name: (cells after a Markdown title, options, the event's kind and sentence, the two exercises' messages,
#        the JSON's problem)
SCENARIOS = {
    "loop": (["while True:\n    pass\ny = (-0.5, 2.5)", IMPORT + f"check('{EX2}', y)"],
             ["--cell-timeout", "3"], "cell timeout", "cell 2 stopped after 3 s (--cell-timeout)",
             ("not reached: cell 2 stopped after 3 s (--cell-timeout)", NO_ANSWER.format(EX3)), None),
    "memory": ([RIGHT, "block = bytearray(2 * 3072 * 2**20)\nf = None", f"check('{EX3}', f)"],
               ["--memory", "3072"], "memory", "cell 3 raised MemoryError (--memory 3072 MiB)",
               ("2 cases", "not reached: cell 3 raised MemoryError (--memory 3072 MiB)"), None),
    "flood": (["print('x' * 5000)", RIGHT, f"check('{EX3}', undefined_name)"],
              ["--max-output", "2000"], "output cut", "output past 2000 bytes dropped from cell 2 on (--max-output)",
              ("2 cases", NO_ANSWER.format(EX3)), None),
    "crash": ([RIGHT, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", f"check('{EX3}', None)"],
              [], "dead kernel", "the kernel died in cell 3 (DeadKernelError)",
              ("not graded: the kernel died in cell 3 (DeadKernelError)",
               "not reached: the kernel died in cell 3 (DeadKernelError)"),
              "the kernel died in cell 3 (DeadKernelError)"),
    "stuck": (["import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass", RIGHT],
              ["--cell-timeout", "2", "--timeout", "10"], "notebook timeout",
              "the notebook did not finish within 10 s (--timeout): cell 2 ran past 2 s (--cell-timeout) and "
              "ignored the interrupt",
              ("not reached: the notebook did not finish within 10 s (--timeout): cell 2 ran past 2 s "
               "(--cell-timeout) and ignored the interrupt",
               "not graded: the notebook did not finish within 10 s (--timeout): cell 2 ran past 2 s "
               "(--cell-timeout) and ignored the interrupt"),
              "the notebook did not finish within 10 s (--timeout): cell 2 ran past 2 s (--cell-timeout) and "
              "ignored the interrupt"),
}


@pytest.fixture(scope="module")
def bubblewrap():
    """The sandbox the grades come from: skipped without it, naming the problem (failed with CI=true)."""
    problem = sandbox_problem()
    require_system_tool(problem and f"grading tests need a working bubblewrap sandbox: {problem}")


@pytest.mark.slow
@pytest.mark.parametrize("student", list(SCENARIOS))
def test_what_stopped_a_notebook_is_in_its_grades(student, tmp_path, bubblewrap, capsys):
    cells, options, kind, sentence, messages, problem = SCENARIOS[student]
    subs, out = tmp_path / "submissions", tmp_path / "grades"
    subs.mkdir()
    nbformat.write(new_notebook(cells=[new_markdown_cell("# My answers"), *map(new_code_cell, cells)]),
                   subs / f"{student}.ipynb")
    assert main(["grade", str(subs), "--chapter", "mahdavi/skip", "--output", str(out), *options]) == 0
    capsys.readouterr()
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = {r["exercise"]: r for r in reader}
    assert reader.fieldnames == ["student", "exercise", "result", "message", "events"]
    assert [rows[EX2]["message"], rows[EX3]["message"]] == list(messages)
    assert rows[EX2]["events"] == rows[EX3]["events"] == sentence
    record = json.loads((out / "students" / f"{student}.json").read_text(encoding="utf-8"))
    assert record["events"] == [{"cell": int(sentence.split("cell ")[1].split()[0]), "kind": kind,
                                 "message": sentence}]
    assert record["problem"] == problem
    assert [e["message"] for e in record["exercises"]] == list(messages)
    score = sum(m == "2 cases" for m in messages)
    assert f"  {student}: {score}/2; {sentence}\n" in (out / "summary.txt").read_text(encoding="utf-8")
    executed = nbformat.read(out / "notebooks" / f"{student}.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []))
    marker = "output beyond 2000 bytes dropped" if kind == "output cut" else sentence
    assert f"[memcap grade: {marker}]" in printed


@pytest.mark.slow
def test_a_notebook_that_ran_cleanly_has_no_events(tmp_path, bubblewrap, capsys):
    subs, out = tmp_path / "submissions", tmp_path / "grades"
    subs.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell(RIGHT)]), subs / "zoe.ipynb")
    assert main(["grade", str(subs), "--chapter", "mahdavi/skip", "--output", str(out)]) == 0
    capsys.readouterr()
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {r["exercise"]: r for r in csv.DictReader(handle)}
    assert rows[EX2]["events"] == rows[EX3]["events"] == ""
    assert rows[EX3]["message"] == NO_ANSWER.format(EX3)
    record = json.loads((out / "students" / "zoe.json").read_text(encoding="utf-8"))
    assert record["events"] == [] and record["problem"] is None
    assert "  zoe: 1/2\n" in (out / "summary.txt").read_text(encoding="utf-8")

"""The instructors' side of the site in a real browser: the exercise index, a checked exercise's solution
dropdown in the full edition and its absence in the student edition, and the student notebooks.

Both editions are served as an instructor publishes them: the full edition at the root, the student
edition under ``student/``. The session's full build leaves ``memcap_student_url`` unset (as the README's
build does), so its index has no student-edition column; the URL that column would hold
(:func:`memcap.textbook.course.student_link`) is followed here by hand. Reuses the session's two strict
builds (fixtures ``site`` and ``student_site``).
"""
from __future__ import annotations

import functools
import http.server
import threading
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from memcap.textbook.edition import strip_solutions
from memcap.textbook.exercises import registry
from tests import pagecheck
from tests.conftest import ROOT, require_system_tool

pytestmark = [pytest.mark.slow, pytest.mark.browser]

INDEX = "book/appendix/instructors"
CHAPTER = "book/mahdavi/skip"
LABEL = "ex-mahdavi-skip-3"


@contextmanager
def _serve_both(full: Path, student: Path):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            if path.startswith("/student/"):
                return str(student / path[len("/student/"):].split("?")[0].split("#")[0])
            return super().translate_path(path)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(full)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


@pytest.fixture(scope="module")
def base(site, student_site):
    with _serve_both(site.html, student_site) as url:
        yield url


@pytest.fixture(scope="session", autouse=True)
def chromium_installed():
    """Skip (fail with CI=true) before the site is built when Chromium is missing: .ci/run installs it."""
    require_system_tool(None if pagecheck.chromium_path() else pagecheck.MISSING_CHROMIUM)


@pytest.fixture(scope="module")
def browser():
    with pagecheck.chromium() as b:
        yield b


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": pagecheck.DESKTOP, "height": 900})
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("prefix", ["", "student/"])
def test_instructors_page_reads_well(browser, base, prefix):
    report = pagecheck.check_page(browser, base + ("/student" if prefix else ""), INDEX, pagecheck.DESKTOP)
    assert not report.problems, report.problems
    report = pagecheck.check_page(browser, base + ("/student" if prefix else ""), INDEX, pagecheck.PHONE)
    assert not report.problems, report.problems


def test_the_index_lists_every_exercise_with_difficulty_time_and_both_editions(page, base):
    from memcap.textbook.course import load_exercises, student_link

    exercises = load_exercises(ROOT)
    page.goto(f"{base}/{INDEX}.html", wait_until="load")
    index = page.locator("table.memcap-exercise-index")
    header = [h.strip() for h in index.locator("thead th").all_inner_texts()]
    # no student-edition column unless memcap_student_url says where that edition is published
    assert header == ["Chapter", "Exercise", "Kind", "Difficulty", "Time", "Checker"]
    assert page.locator("a.memcap-student-link").count() == 0
    rows = index.locator("tbody tr")
    assert rows.count() == len(exercises) >= 50
    for k, ex in enumerate(exercises):
        cells = [c.strip() for c in rows.nth(k).locator("td").all_inner_texts()]
        assert cells[2] == ex["kind"]
        assert cells[3] == (ex["difficulty"] or "–") and cells[4] == (f"{ex['minutes']} min" if ex["minutes"] else "–")
        assert cells[5] == ("yes" if ex["label"] in registry() else "")
    row = rows.nth(next(k for k, ex in enumerate(exercises) if ex["label"] == LABEL))
    assert [c.strip() for c in row.locator("td").all_inner_texts()][3:6] == ["medium", "25 min", "yes"]
    # the exercise link leads to the exercise in the full edition, its solution one click away
    row.locator("td").nth(1).locator("a").click()
    page.wait_for_load_state("load")
    assert page.url.endswith(f"{CHAPTER}.html#{LABEL}")
    assert page.locator(f"#{LABEL}").is_visible()
    # with memcap_student_url = "student/", the column's link leads to the same exercise in the student
    # edition, without a solution
    href = student_link("student/", INDEX, CHAPTER, LABEL)
    assert href == f"../../student/{CHAPTER}.html#{LABEL}"
    page.goto(urllib.request.urljoin(f"{base}/{INDEX}.html", href), wait_until="load")
    assert page.url == f"{base}/student/{CHAPTER}.html#{LABEL}"
    assert page.locator(f"#{LABEL}").is_visible()
    assert "(student edition)" in page.title()
    assert page.locator("div.solution").count() == 0


def test_problem_sets_and_checkers_are_listed(page, base):
    page.goto(f"{base}/{INDEX}.html", wait_until="load")
    sets = page.locator("p.memcap-problem-set")
    assert sets.count() == 14
    theorem = sets.filter(has_text="Theorem 1 and when it is tight").inner_text()
    assert "6 exercises, about 2 h 10 min" in theorem, theorem
    checkers = page.locator("dl.memcap-checkers").inner_text()
    assert 'check("ex-mahdavi-skip-3", second_layer)' in checkers and "random first layer" in checkers


def test_a_checked_exercise_has_its_solution_dropdown_in_the_full_edition_only(page, base, site):
    page.goto(f"{base}/{CHAPTER}.html", wait_until="load")
    exercise = page.locator(f"#{LABEL}")
    assert f'check("{LABEL}", second_layer)' in exercise.inner_text()
    solution = page.locator(f"div.solution:has(a[href='#{LABEL}'])")
    assert solution.count() == 1
    body = solution.locator("section").first
    assert not body.is_visible(), "the solution is visible before the reader opens it"
    solution.locator("button.toggle-button, p.admonition-title").first.click()
    body.wait_for(state="visible", timeout=5000)
    assert f'assert check("{LABEL}", second_layer)' in body.inner_text()
    assert f"{LABEL}: passed (3 cases)" in body.inner_text()
    page.goto(f"{base}/student/{CHAPTER}.html", wait_until="load")
    assert f'check("{LABEL}", second_layer)' in page.locator(f"#{LABEL}").inner_text()
    assert page.locator("div.solution").count() == 0 and "assert check(" not in page.content()
    page.goto(f"{base}/student/{INDEX}.html", wait_until="load")
    header = page.locator("table.memcap-exercise-index thead th").all_inner_texts()
    assert "Student edition" not in [h.strip() for h in header]


def test_the_student_notebook_downloads_without_solutions_and_with_the_checks(page, base):
    page.goto(f"{base}/student/{CHAPTER}.html", wait_until="load")
    links = page.locator(".dropdown-download-buttons a")
    menu = {links.nth(i).inner_text().strip(): links.nth(i).get_attribute("href") for i in range(links.count())}
    assert ".ipynb" in menu and ".md" in menu, menu
    url = urllib.request.urljoin(f"{base}/student/{CHAPTER}.html", menu[".ipynb"])
    assert url.endswith(".ipynb"), url
    with urllib.request.urlopen(url, timeout=10) as response:
        notebook = nbformat.reads(response.read().decode("utf-8"), as_version=4)
    nbformat.validate(notebook)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    for label in ("ex-mahdavi-skip-2", "ex-mahdavi-skip-3"):
        assert f'check("{label}"' in code
        assert f'assert check("{label}"' not in code
    assert not any(c.get("outputs") for c in notebook.cells if c.cell_type == "code")
    md_url = urllib.request.urljoin(f"{base}/student/{CHAPTER}.html", menu[".md"])
    with urllib.request.urlopen(md_url, timeout=10) as response:
        source = response.read().decode("utf-8")
    assert source == strip_solutions((ROOT / f"{CHAPTER}.md").read_text(encoding="utf-8"))
    # it runs headlessly from top to bottom, the cells to fill in included (as a student's "Run all")
    NotebookClient(notebook, timeout=600, kernel_name="python3", skip_cells_with_tag="memcap-none",
                   resources={"metadata": {"path": str(ROOT / "book" / "mahdavi")}}).execute()
    printed = "".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", []))
    assert "ex-mahdavi-skip-2: not yet right" in printed and "ex-mahdavi-skip-3: not yet right" in printed


@pytest.mark.parametrize("base_url, fromdoc, expected", [
    ("student/", "book/appendix/instructors", "../../student/book/skip.html#ex-1"),
    ("student", "index", "student/book/skip.html#ex-1"),
    ("https://example.org/student", "book/appendix/instructors", "https://example.org/student/book/skip.html#ex-1"),
    ("/courses/student/", "book/appendix/instructors", "/courses/student/book/skip.html#ex-1"),
])
def test_student_link_is_relative_to_the_page_or_absolute(base_url, fromdoc, expected):
    from memcap.textbook.course import student_link

    assert student_link(base_url, fromdoc, "book/skip", "ex-1") == expected

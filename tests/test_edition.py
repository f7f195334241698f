import re

import pytest

from memcap.textbook.edition import strip_solutions

CHAPTER = """# Title

```{exercise-start}
:label: ex-a-1
```
Prove it.
```{exercise-end}
```

```{solution-start} ex-a-1
:class: dropdown
```
The secret proof.
```{code-cell} ipython3
print("secret code")
```
```{solution-end}
```

````{solution} ex-a-2
:class: dropdown
Another secret.
````

After.
"""


def test_strip_solutions_keeps_exercises_and_drops_every_solution():
    out = strip_solutions(CHAPTER)
    assert "Prove it." in out and "{exercise-end}" in out and "After." in out
    assert "secret" not in out
    assert "solution" not in out


def test_strip_solutions_is_identity_without_solutions():
    text = "# A\n\n```{code-cell} ipython3\n1 + 1\n```\n"
    assert strip_solutions(text) == text


def test_unclosed_gated_solution_is_an_error():
    with pytest.raises(ValueError, match="never closed by a solution-end"):
        strip_solutions("```{solution-start} ex-a-1\n```\nno end\n")


def test_solution_end_without_start_is_an_error():
    with pytest.raises(ValueError, match="solution-end without a matching solution-start"):
        strip_solutions("```{solution-end}\n```\n")


def test_non_text_is_rejected():
    with pytest.raises(TypeError, match="text must be a str"):
        strip_solutions(b"bytes")


def test_exercise_index_reads_labels_and_kinds_in_toc_order(tmp_path):
    from memcap.textbook.edition import exercise_index

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: a\nparts:\n  - chapters:\n      - file: b\n")
    (tmp_path / "a.md").write_text("# Intro\n\nno exercises\n")
    (tmp_path / "b.md").write_text(
        "# Chapter B\n\n```{exercise-start}\n:label: ex-b-1\n```\n**(Proof.)** Show it.\n```{exercise-end}\n```\n\n"
        "```{exercise-start}\n:label: ex-b-2\n```\nNo tag here.\n```{exercise-end}\n```\n"
        "```{exercise-start}\n:label: ex-b-3\n```\n(Coding.) Not bold.\n```{exercise-end}\n```\n"
        "```{exercise-start}\n:label: ex-b-4\n```\n**(Coding, hard, 45 min.)** Tagged.\n```{exercise-end}\n```\n"
        "```{exercise-start}\n:label: ex-b-5\n```\n(Computation, easy.) No time.\n```{exercise-end}\n```\n")
    rows = exercise_index(tmp_path)
    plain = {"difficulty": None, "minutes": None}
    assert rows == [
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-1", "kind": "proof", **plain},
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-2", "kind": "other", **plain},
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-3", "kind": "coding", **plain},
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-4", "kind": "coding", "difficulty": "hard", "minutes": 45},
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-5", "kind": "computation", "difficulty": "easy",
         "minutes": None},
    ]
    with pytest.raises(ValueError, match="with _toc.yml"):
        exercise_index(tmp_path / "nowhere")


# ---------------------------------------------------------------------------------------------------
# the student edition, built (slow: a second strict build of the whole book)
# ---------------------------------------------------------------------------------------------------

_GATED = r"^```\{{{kind}-start\}}[^\n]*\n(?::[^\n]*\n)*```\n(.*?)^```\{{{kind}-end\}}"
_WORDS = re.compile(r"(?<![\w$\\{}`*])(?:[A-Za-z]+,? ){5,}[A-Za-z]+(?![\w$\\{}`*])")


def _blocks(kind: str, text: str) -> list[str]:
    return re.findall(_GATED.format(kind=kind), text, re.MULTILINE | re.DOTALL)


def _phrases(block: str) -> list[str]:
    """Snippets of ``block`` that render verbatim: runs of 6+ plain words of a prose line, and code lines."""
    out, in_code = [], False
    for line in block.splitlines():
        if line.startswith("```"):
            in_code = line.startswith("```{code-cell}")
            continue
        if in_code:
            if len(line.strip()) >= 25 and not line.lstrip().startswith(("#", ":")):
                out.append(" ".join(line.split()))
        elif not line.startswith(":"):
            out += _WORDS.findall(line)
    return out


def _page_text(html: str) -> str:
    """What a reader sees (tags removed, entities decoded, whitespace collapsed)."""
    import html as html_lib

    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_phrase_extraction_on_the_sample_chapter():
    assert _blocks("exercise", CHAPTER) == ["Prove it.\n"]
    sample = ("Any family of points in an affine set spans, at most, $k$ dims.\n"
              "```{code-cell} ipython3\nprint('a long enough line of code')\n```\n")
    assert _phrases(sample) == ["Any family of points in an affine set spans, at most",
                                "print('a long enough line of code')"]


@pytest.mark.slow
def test_student_edition_keeps_every_exercise_and_no_solution(student_site):
    from memcap.textbook.edition import exercise_index
    from tests.conftest import ROOT, toc_files

    labels = {}
    for row in exercise_index(ROOT):
        labels.setdefault(row["doc"], []).append(row["label"])
    assert sum(map(len, labels.values())) >= 50
    kept = hidden = 0
    for doc in toc_files():
        page = student_site / f"{doc}.html"
        assert page.is_file(), f"the student edition has no page for {doc}"
        html = page.read_text(encoding="utf-8")
        text = _page_text(html)
        assert 'class="solution' not in html and "Solution to" not in text, f"{doc}: a solution is shown"
        for label in labels.get(doc, []):
            assert f'id="{label}"' in html, f"{doc}: exercise {label} is missing"
        source = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
        shown, compact = set(), "".join(text.split())   # code is split into tokens: compare without spaces
        for block in _blocks("exercise", source):
            for phrase in _phrases(block):
                assert "".join(phrase.split()) in compact, f"{doc}: exercise text {phrase!r} is missing"
                shown.add(phrase)
                kept += 1
        for block in _blocks("solution", source):
            for phrase in _phrases(block):
                if phrase in shown:   # the solution repeats the exercise's cell to fill in (a signature)
                    continue
                assert phrase not in text, f"{doc}: solution text {phrase!r} is in the student edition"
                hidden += 1
    assert kept >= 50 and hidden >= 50, (kept, hidden)   # the checks above compared real text

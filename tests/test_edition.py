import pytest

from memcap.edition import strip_solutions

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
    from memcap.edition import exercise_index

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: a\nparts:\n  - chapters:\n      - file: b\n")
    (tmp_path / "a.md").write_text("# Intro\n\nno exercises\n")
    (tmp_path / "b.md").write_text(
        "# Chapter B\n\n```{exercise-start}\n:label: ex-b-1\n```\n**(Proof.)** Show it.\n```{exercise-end}\n```\n\n"
        "```{exercise-start}\n:label: ex-b-2\n```\nNo tag here.\n```{exercise-end}\n```\n"
        "```{exercise-start}\n:label: ex-b-3\n```\n(Coding.) Not bold.\n```{exercise-end}\n```\n")
    rows = exercise_index(tmp_path)
    assert rows == [
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-1", "kind": "proof"},
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-2", "kind": "other"},
        {"doc": "b", "chapter": "Chapter B", "label": "ex-b-3", "kind": "coding"},
    ]
    with pytest.raises(ValueError, match="with _toc.yml"):
        exercise_index(tmp_path / "nowhere")

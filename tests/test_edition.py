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

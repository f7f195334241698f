"""The README's "Use the library" examples run as written (each Python block in that section, in order)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _library_blocks() -> list[str]:
    text = README.read_text()
    section = text.split("## Use the library", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_section_has_the_three_examples():
    assert len(_library_blocks()) == 3


@pytest.mark.parametrize("index", range(3))
def test_readme_example_runs(index, one_thread, capsys):
    exec(compile(_library_blocks()[index], f"README.md (library example {index + 1})", "exec"), {})
    assert capsys.readouterr().out   # each example prints what it found

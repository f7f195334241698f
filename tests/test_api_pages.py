"""The API appendix: one page per module, each in the table of contents and listed on the overview page,
and every module of the public API (tests/api_cases.py) has its page."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

from tests.api_cases import PUBLIC_MODULES
from tests.conftest import ROOT, toc_files

PAGES = sorted((ROOT / "book/appendix/api").glob("*.md"))


def _module_of(page: Path) -> str:
    found = re.findall(r"^\.\. automodule:: (\S+)$", page.read_text(), flags=re.M)
    assert len(found) == 1, f"{page.name} must document exactly one module, found {found}"
    return found[0]


def test_every_page_documents_one_importable_module_and_is_in_the_toc():
    docs = set(toc_files())
    overview = (ROOT / "book/appendix/api.md").read_text()
    for page in PAGES:
        module = _module_of(page)
        importlib.import_module(module)
        doc = page.relative_to(ROOT).with_suffix("").as_posix()
        assert doc in docs, f"{doc} is not in _toc.yml"
        assert f"{{doc}}`{module} <api/{page.stem}>`" in overview, f"the overview page does not list {module}"


def test_every_public_module_has_a_page():
    documented = {_module_of(page) for page in PAGES}
    missing = sorted(set(PUBLIC_MODULES) - {"memcap"} - documented)
    assert not missing, f"public modules without a page in book/appendix/api/: {missing}"


LONGEST_VALUE = 1000
"""Characters of a documented constant's value that its API page may show; a longer one is a wall of text
there (``memcap.bounds.BOUNDS`` was 4,000), so its docstring hides it (``:meta hide-value:``)."""


def test_no_api_page_shows_a_constant_longer_than_a_paragraph():
    from sphinx.pycode import ModuleAnalyzer
    from sphinx.util.inspect import object_description

    walls = []
    for page in PAGES:
        module = importlib.import_module(_module_of(page))
        docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
        for name in getattr(module, "__all__", []):
            value = getattr(module, name)
            if ("", name) in docs and len(object_description(value)) > LONGEST_VALUE \
                    and ":meta hide-value:" not in "\n".join(docs[("", name)]):
                walls.append(f"{module.__name__}.{name} ({len(object_description(value))} characters)")
    assert not walls, f"add ':meta hide-value:' to the docstrings of {walls}"

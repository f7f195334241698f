"""memcap.textbook.site keeps inline math together with the characters glued to it (no space between), so
that a browser cannot leave a "." or "(" alone at a line's start or end (tests/test_browser.py checks pages)."""
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from memcap.textbook.site import _MathKeepsItsPunctuation


def _paragraph(*parts: str) -> nodes.paragraph:
    """A paragraph of text and inline math: ``"$x$"`` is a formula, anything else text."""
    doc = new_document("test", get_default_settings(Parser))
    para = nodes.paragraph()
    para += [nodes.math(text=p[1:-1]) if p.startswith("$") else nodes.Text(p) for p in parts]
    doc += para
    _MathKeepsItsPunctuation(doc).run()
    return para


def _groups(para: nodes.paragraph) -> list[str]:
    return [g.astext() for g in para.findall(nodes.inline) if "memcap-nowrap" in g["classes"]]


def test_a_formula_keeps_its_punctuation_and_the_text_is_unchanged():
    para = _paragraph("so (", "$x$", "), and ", "$y$", ". Then ", "$z$", " is free; the ", "$d$",
                      "-dimensional one, twice: ", "$a$", ",", "$b$", ".")
    assert para.astext() == "so (x), and y. Then z is free; the d-dimensional one, twice: a,b."
    assert _groups(para) == ["(x),", "y.", "d-dimensional", "a,", "b."]
    assert [m.astext() for m in para.findall(nodes.math)] == ["x", "y", "z", "d", "a", "b"]


def test_equal_texts_elsewhere_in_the_paragraph_are_left_where_they_are():
    """Text nodes compare as strings: the "." of the second formula must be the one moved, not the first."""
    para = _paragraph(".", "$x$", " and ", "$y$", ".")
    assert para.astext() == ".x and y."
    assert _groups(para) == [".x", "y."]
    assert isinstance(para[0], nodes.inline) and para[1].astext() == " and "


def test_a_formula_with_spaces_around_it_is_left_alone():
    para = _paragraph("a ", "$x$", " b")
    assert _groups(para) == [] and [type(n) for n in para.children] == [nodes.Text, nodes.math, nodes.Text]

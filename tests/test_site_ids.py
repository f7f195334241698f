"""memcap.site's unique box ids: boxes get unique ids, section headings keep theirs."""
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from memcap.site import _UniqueBoxIds


def _document():
    doc = new_document("test", get_default_settings(Parser))
    section = nodes.section(ids=["proof"])            # a "## Proof" heading
    section += nodes.title(text="Proof")
    for k in range(2):                                # two proof boxes, same ids
        box = nodes.container(ids=[f"box-{k}"])
        body = nodes.section(ids=["proof"])           # untitled, as sphinx-proof
                                                      # and sphinx-exercise make them
        body += nodes.paragraph(text="...")
        box += body
        section += box
    chapter = nodes.section(ids=["the-chapter"])
    chapter += nodes.title(text="The chapter")
    chapter += section
    doc += chapter
    return doc


def test_boxes_get_unique_ids_and_the_section_keeps_its_own():
    doc = _document()
    _UniqueBoxIds(doc).run()
    headings = [n["ids"] for n in doc.findall(nodes.section)
                if isinstance(n.children[0], nodes.title)]
    assert headings == [["the-chapter"], ["proof"]]
    bodies = [n["ids"][0] for n in doc.findall(nodes.section)
              if isinstance(n.parent, nodes.container)]
    assert bodies == ["box-0-proof", "box-1-proof"]

"""memcap.textbook.site's unique box ids: boxes get unique ids, section headings keep theirs."""
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from memcap.textbook.site import _UniqueBoxIds


def _document():
    """A chapter with a "## Proof" heading holding two {prf:proof} boxes and two exercises, with the ids
    sphinx-proof and sphinx-exercise give them: every proof box is an admonition with the id "proof",
    every exercise body an untitled section with the id "exercise-content"."""
    doc = new_document("test", get_default_settings(Parser))
    chapter = nodes.section(ids=["the-chapter"])
    chapter += nodes.title(text="The chapter")
    section = nodes.section(ids=["proof"])            # a "## Proof" heading
    section += nodes.title(text="Proof")
    for k in range(2):
        section += nodes.admonition("", nodes.paragraph(text="..."), ids=["proof"])
        box = nodes.container(ids=[f"ex-{k}"])
        box += nodes.section("", nodes.paragraph(text="..."), ids=["exercise-content"])
        section += box
    chapter += section
    doc += chapter
    return doc


def test_boxes_get_unique_ids_and_the_section_keeps_its_own():
    doc = _document()
    _UniqueBoxIds(doc).run()
    headings = [n["ids"] for n in doc.findall(nodes.section) if isinstance(n.children[0], nodes.title)]
    assert headings == [["the-chapter"], ["proof"]]
    proofs = [n["ids"][0] for n in doc.findall(nodes.admonition)]
    assert proofs == ["proof-proof", "proof-proof-2"]
    bodies = [n["ids"][0] for n in doc.findall(nodes.section) if isinstance(n.parent, nodes.container)]
    assert bodies == ["ex-0-exercise-content", "ex-1-exercise-content"]
    every = [i for n in doc.findall(nodes.Element) for i in n.get("ids", [])]
    assert len(every) == len(set(every))

"""The experiments chapters as a GPU session's results will leave them: every paper job of the twelve figures in
the results cache and a record of each kept (made-up numbers, :mod:`tests.made_up`; no training). Each chapter
must run without a cell error or a warning, draw the paper profile from the cache, and show every recorded run
beside it (panel, caption, paragraph, opening table): what a CPU build never sees until real results arrive."""
import pytest

from memcap import experiments
from memcap.experiments import recorded
from tests.made_up import PAPERS, made_up_papers
from tests.run_chapter import execute_chapter

pytestmark = pytest.mark.slow

CHAPTERS = {"book/experiments/dana.md": ("dana-exp-", ("1a", "2a", "3", "4"), "dana_"),
            "book/experiments/mahdavi.md": ("mexp-", ("2b", "2c", "4", "5"), "mahdavi_")}
"""Per chapter: its glue prefix, the figures whose recorded run is shown through ``recorded.account`` and
``recorded.caption`` (the others have paragraphs of their own), the prefix of its experiments."""


def glued(nb) -> dict:
    """``{key: text}`` of what the chapter glued (markdown, else plain text)."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook", {})
            if meta.get("name"):
                data = {k.removeprefix(meta.get("mime_prefix", "")): v for k, v in o.get("data", {}).items()}
                out[meta["name"]] = data.get("text/markdown") or data.get("text/plain") or ""
    return out


@pytest.fixture(scope="module")
def papers(tmp_path_factory):
    return made_up_papers(tmp_path_factory.mktemp("papers"))


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_a_chapter_draws_the_paper_profile_and_every_recorded_run(chapter, papers, monkeypatch):
    cache, records = papers
    monkeypatch.setenv("MEMCAP_CACHE", str(cache))
    monkeypatch.setenv(recorded.ENV, str(records))
    nb, _ = execute_chapter(chapter)      # fails on a cell error or any output to stderr (warnings)
    glue = glued(nb)
    prefix, figures, family = CHAPTERS[chapter]
    for fig in figures:
        account, caption = glue[f"{prefix}{fig}-recorded"], glue[f"{prefix}{fig}-rec-caption"]
        assert account.startswith("*At the paper's size, recorded.*") and "made-up results of a test" in account
        assert ": a run at the paper's grid (paper profile, recorded run: commit aaaaaaa" in caption
    summary = glue[f"{prefix}summary"]
    assert summary.count("\n|") == summary.count("\n") and "not recorded" not in summary
    assert summary.count("| {numref}") == len([n for n in PAPERS if n.startswith(family)])
    # every figure whose paper jobs are all in the cache draws them (mahdavi_fig3's are not made up)
    cached = [n for n in PAPERS if n.startswith(family) and experiments.cached(n, "paper", cache) is not None]
    assert sum("(paper profile, cached results: commit aaaaaaa" in v for v in glue.values()) >= len(cached)

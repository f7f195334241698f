"""Build a few chapters quickly and check them in the browser, while writing:

    python -m tests.preview book/dana/lookup.md book/dana/aot.md [--out DIR] [--full-page]

Builds the preface and the named chapters (with their parts) into ``DIR`` (default
``_build/preview``), executing them, then opens every built chapter at 1280 and 390 px with the same
checks as ``tests/test_browser.py`` and saves screenshots ``DIR/shots/<chapter>-<width>.png``. References
to chapters left out of the preview cannot resolve, so the build is not strict (warnings are printed,
not fatal): the strict build of the whole book stays the arbiter. Exit status 1 if a page has problems.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests import pagecheck

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = "book/appendix/references"


def subset_toc(chapters: list[str]) -> dict:
    """The book's ``_toc.yml`` restricted to ``chapters`` (paths without suffix), parts kept."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    wanted = set(chapters)
    parts = []
    for part in toc.get("parts", []):
        kept = [c for c in part.get("chapters", []) if c.get("file") in wanted]
        if kept:
            parts.append({**part, "chapters": kept})
    missing = wanted - {c["file"] for p in parts for c in p["chapters"]} - {toc["root"]}
    if missing:
        raise SystemExit(f"not in _toc.yml: {sorted(missing)}")
    return {**toc, "parts": parts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="+", help="chapter sources, e.g. book/dana/lookup.md")
    parser.add_argument("--out", default=str(ROOT / "_build" / "preview"), help="output folder")
    parser.add_argument("--full-page", action="store_true", help="screenshots of whole pages")
    parser.add_argument("--parts", action="store_true",
                        help="also a screenshot of every figure and theorem-like box (-fig<k>, -box<k>)")
    parser.add_argument("--no-build", action="store_true", help="only check an earlier preview build")
    args = parser.parse_args(argv)
    chapters = [str(Path(c).with_suffix("")) for c in args.chapters]
    built = chapters + [REFERENCES] * (REFERENCES not in chapters)  # citations need the bibliography
    out = Path(args.out).resolve()
    if not args.no_build:
        out.mkdir(parents=True, exist_ok=True)
        toc_path = out / "_toc.yml"
        toc_path.write_text(yaml.safe_dump(subset_toc(built), sort_keys=False), encoding="utf-8")
        jb = Path(sys.executable).with_name("jupyter-book")
        start = time.perf_counter()
        proc = subprocess.run([str(jb), "build", str(ROOT), "--toc", str(toc_path), "--path-output", str(out),
                               "--all", "--keep-going"], cwd=ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        warnings = [line for line in (proc.stdout + proc.stderr).splitlines()
                    if ("WARNING" in line or "ERROR" in line) and not line.startswith("[IPKernelApp]")]
        print(f"built {len(chapters)} chapter(s) in {seconds:.0f} s (returncode {proc.returncode}); "
              f"{len(warnings)} warning(s):")
        for line in warnings:
            print("  ", line)
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-4000:])
            return 1
    html = out / "_build" / "html"
    bad = 0
    with pagecheck.serve(html) as base, pagecheck.chromium() as browser:
        for doc in chapters:
            for width in (pagecheck.DESKTOP, pagecheck.PHONE):
                shot = out / "shots" / f"{doc.replace('/', '__')}-{width}.png"
                report = pagecheck.check_page(browser, base, doc, width, screenshot=shot,
                                              full_page=args.full_page, parts=args.parts)
                status = "ok" if not report.problems else f"{len(report.problems)} problem(s)"
                print(f"{doc} at {width} px: {status}   screenshot: {shot}")
                for problem in report.problems:
                    print("   -", problem)
                bad += bool(report.problems)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Execute one chapter headlessly, outside the book build: ``python -m tests.run_chapter book/x.md``.

Reads the jupytext MyST file, runs it with nbclient in the chapter's folder, fails on the first cell
error or on any output to stderr (the strict build treats stderr as a failure too) and prints the time.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import jupytext
from nbclient import NotebookClient


def execute_chapter(path: str | Path, timeout: int = 600):
    """Run every code cell of the chapter at ``path``; return ``(notebook, seconds)``.

    Raises ``nbclient.exceptions.CellExecutionError`` on a cell error (unless the cell is tagged
    ``raises-exception``) and ``RuntimeError`` if a cell writes to stderr.
    """
    path = Path(path).resolve()
    nb = jupytext.read(path)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                raise RuntimeError(f"{path.name}: code cell {i} wrote to stderr:\n{out.get('text', '')}")
    return nb, seconds


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m tests.run_chapter book/<chapter>.md [...]", file=sys.stderr)
        return 2
    for arg in argv:
        _, seconds = execute_chapter(arg)
        print(f"{arg}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Execute every chapter's code cells on the default device: the book on a GPU, whenever one is lent.

    python -m tests.gpu_book                      # every chapter of _toc.yml with code, on pick_device()
    python -m tests.gpu_book book/setting.md      # some chapters
    python -m tests.gpu_book --simulate ...       # on a CPU: a stand-in second device (tests/device_sim.py)
    python -m tests.gpu_book --json out.json ...  # also write the results, with the machine and commit

It needs only what a GPU machine's image has (torch, numpy, sympy, matplotlib): no jupytext, no Jupyter.
Each chapter runs in its own Python process, cell after cell in one namespace, as its notebook would:
cells tagged ``skip-execution`` are skipped (students' templates), cells tagged ``raises-exception`` must
raise, ``myst_nb.glue`` is stubbed (and IPython's display where IPython is missing), and, as in the strict
build, a cell that raises or writes to stderr fails the chapter. It counts the figures each chapter draws
and the exercise checks it passes (the book's solutions ``assert check(...)``), and prints one line per
chapter and a summary; exit status 1 if any chapter failed or ran out of time.

This is the check behind the appendix's record "the whole book on a GPU"; the strict build
(``jupyter-book build``) is the one that publishes, and it runs on the CPU in CI.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import datetime
import io
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
_MARK = "@@gpu_book@@ "


def cells(text: str) -> list[tuple[str, str]]:
    """``(tags, source)`` of every code cell of a MyST chapter (option lines kept as ``tags``)."""
    found = []
    for body in _FENCE.findall(text):
        lines = body.split("\n")
        options = []
        if lines and lines[0].strip() == "---":
            end = lines.index("---", 1)
            options, lines = lines[1:end], lines[end + 1:]
        while lines and lines[0].startswith(":"):
            options.append(lines.pop(0))
        source = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
        found.append((" ".join(options), source))
    return found


def toc_chapters() -> list[Path]:
    """The chapters of ``_toc.yml`` that have code cells, in the book's order."""
    files = re.findall(r"(?:root|file):\s*(\S+)", (ROOT / "_toc.yml").read_text(encoding="utf-8"))
    paths = [ROOT / f"{f}.md" for f in files]
    return [p for p in paths if p.is_file() and "{code-cell}" in p.read_text(encoding="utf-8")]


# --- one chapter, in a child process ------------------------------------------------------------------

def _stub_notebook_modules() -> None:
    """``myst_nb.glue`` does nothing outside a notebook; IPython's display is stubbed only if missing."""
    glue = types.ModuleType("myst_nb")
    glue.glue = lambda *args, **kwargs: None
    sys.modules["myst_nb"] = glue
    try:
        import IPython.display  # noqa: F401
    except ImportError:
        ipython = types.ModuleType("IPython")
        display = types.ModuleType("IPython.display")

        class _Shown:
            def __init__(self, *args, **kwargs):
                pass

        for name in ("SVG", "HTML", "Markdown", "Image", "Math", "Latex"):
            setattr(display, name, _Shown)
        display.display = lambda *args, **kwargs: None
        ipython.display = display
        ipython.get_ipython = lambda: None
        ipython.version_info = (8, 0, 0)         # matplotlib reads it when a figure is made
        sys.modules["IPython"], sys.modules["IPython.display"] = ipython, display


def _counters() -> dict[str, int]:
    """Count figures drawn and exercise checks passed, by wrapping matplotlib and memcap's checker."""
    counts = {"figures": 0, "checks_passed": 0, "checks_failed": 0}
    import matplotlib.figure

    init = matplotlib.figure.Figure.__init__

    def counted_init(self, *args, **kwargs):
        counts["figures"] += 1
        init(self, *args, **kwargs)

    matplotlib.figure.Figure.__init__ = counted_init
    import memcap.textbook.exercises as exercises

    run_check = exercises.run_check

    def counted_check(*args, **kwargs):
        result = run_check(*args, **kwargs)
        counts["checks_passed" if result.passed else "checks_failed"] += 1
        return result

    exercises.run_check = counted_check
    return counts


def _shown(path: Path) -> str:
    """``path`` relative to the checkout where it lies inside it."""
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def run_one(path: Path, simulate: bool) -> dict:
    """Execute the chapter at ``path`` in this process; return what happened."""
    import matplotlib

    matplotlib.use("Agg")
    _stub_notebook_modules()
    if simulate:
        from tests import device_sim

        device_sim.install()
    counts = _counters()
    import torch

    from memcap import device
    from memcap.textbook.edition import code_digest

    text = path.read_text(encoding="utf-8")
    report = {"chapter": _shown(path), "device": str(device.pick_device()), "code_sha": code_digest(text),
              "cells": 0, "skipped": 0, "status": "ok", "error": ""}
    os.chdir(path.parent)
    namespace = {"__name__": "__main__"}
    start = time.perf_counter()
    for i, (tags, source) in enumerate(cells(text)):
        if "skip-execution" in tags:
            report["skipped"] += 1
            continue
        err = io.StringIO()
        raised = None
        try:
            with contextlib.redirect_stderr(err):
                exec(compile(source, f"{path.name}:cell{i}", "exec"), namespace)
        except Exception as exc:  # a failing cell: what the strict build reports
            raised = exc
            frames = [f for f in traceback.extract_tb(exc.__traceback__)
                      if not f.filename.endswith(("device_sim.py", "gpu_book.py"))]
            tb = [f"{Path(f.filename).name}:{f.lineno} {f.name}: {(f.line or '').strip()}" for f in frames]
        report["cells"] += 1
        if "raises-exception" in tags:
            if raised is None:
                report.update(status="FAIL", error=f"cell {i} is tagged raises-exception but did not raise")
                break
            continue
        if raised is not None:
            report.update(status="FAIL", error=f"cell {i}: {type(raised).__name__}: {str(raised)[:300]} :: "
                                               f"{' | '.join(tb[-3:])[:700]}")
            break
        if err.getvalue().strip():
            report.update(status="FAIL", error=f"cell {i} wrote to stderr: {err.getvalue().strip()[:400]}")
            break
    report["seconds"] = round(time.perf_counter() - start, 1)
    report.update(counts)
    if torch.cuda.is_available():
        report["max_gpu_memory_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return report


# --- the whole book ----------------------------------------------------------------------------------

def _child(path: Path, simulate: bool, timeout: float, threads: int) -> dict:
    cmd = [sys.executable, "-m", "tests.gpu_book", "--child", str(path)] + (["--simulate"] if simulate else [])
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "MPLBACKEND": "Agg", "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    rel = _shown(path)
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"chapter": rel, "status": "timeout", "seconds": round(time.perf_counter() - start, 1),
                "error": f"still running after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_MARK):
            report = json.loads(line[len(_MARK):])
            report["wall_seconds"] = round(time.perf_counter() - start, 1)
            return report
    return {"chapter": rel, "status": "FAIL", "seconds": round(time.perf_counter() - start, 1),
            "error": f"the chapter's process died (exit {proc.returncode}): {(proc.stdout + proc.stderr)[-600:]}"}


def machine() -> dict:
    """The device, software and commit the run used (``MEMCAP_COMMIT``, when set, names the commit)."""
    from memcap import device

    info = device.describe()
    if os.environ.get("MEMCAP_COMMIT"):     # the device tool copies the working tree, not always its .git
        return {**_about(info), "commit": os.environ["MEMCAP_COMMIT"], "local_changes": False}
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "memcap", "book"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "", False
    return {**_about(info), "commit": commit, "local_changes": dirty}


def _about(info: dict) -> dict:
    import torch

    from memcap import ENGINE_VERSION

    return {"date": datetime.date.today().isoformat(), "device": info["device"],
            "device_name": info["device_name"], "torch": torch.__version__, "cuda": torch.version.cuda,
            "python": platform.python_version(), "cpu_count": info["cpu_count"], "engine_version": ENGINE_VERSION}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.gpu_book", description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter files (default: every chapter with code)")
    parser.add_argument("--jobs", type=int, default=4, help="chapters run at once (default 4)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads per chapter (default 2)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per chapter (default 600)")
    parser.add_argument("--simulate", action="store_true",
                        help="on a CPU: label tensors with the device they would have on a GPU and refuse mixes")
    parser.add_argument("--json", type=Path, help="write the results and the machine to this file")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        report = run_one(args.child.resolve(), args.simulate)
        print(_MARK + json.dumps(report), flush=True)
        return 0
    paths = [Path(c).resolve() for c in args.chapters] or toc_chapters()
    about = machine()
    print(f"{len(paths)} chapter(s) on {about['device']} ({about['device_name']}), torch {about['torch']}, "
          f"commit {about['commit']}{' (+ local changes)' if about['local_changes'] else ''}"
          f"{', SIMULATED second device' if args.simulate else ''}", flush=True)
    results = []
    start = time.perf_counter()
    with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(_child, p, args.simulate, args.timeout, args.threads) for p in paths]
        for future in cf.as_completed(futures):
            r = future.result()
            results.append(r)
            extra = (f"{r.get('cells', 0)} cells, {r.get('figures', 0)} figures, "
                     f"{r.get('checks_passed', 0)} checks passed") if r["status"] == "ok" else r.get("error", "")
            print(f"{r['status']:7s} {r['seconds']:6.1f} s  {r['chapter']}  {extra}", flush=True)
            if args.json:                    # after each chapter: a run cut short keeps what finished
                _write(args.json, about, args, results, time.perf_counter() - start)
    order = {_shown(p): i for i, p in enumerate(paths)}
    results.sort(key=lambda r: order.get(r["chapter"], 0))
    bad = [r for r in results if r["status"] != "ok"]
    wall = time.perf_counter() - start
    print(f"{len(results) - len(bad)} of {len(results)} chapters ok in {wall:.0f} s "
          f"({args.jobs} at a time); figures {sum(r.get('figures', 0) for r in results)}, "
          f"checks passed {sum(r.get('checks_passed', 0) for r in results)}", flush=True)
    if args.json:
        _write(args.json, about, args, results, wall)
    return 1 if bad else 0


def _write(path: Path, about: dict, args, results: list, wall: float) -> None:
    record = {"machine": about, "simulated": args.simulate, "jobs": args.jobs, "wall_seconds": round(wall, 1),
              "chapters": results}
    path.write_text(json.dumps(record, indent=1), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())

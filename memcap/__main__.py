"""Command line: ``python -m memcap COMMAND`` (or the ``memcap`` console script), with the commands
``sweep``, ``cache``, ``list``, ``estimate``, ``bench``, ``student-edition``, ``pdf``, ``doctor`` and ``grade``.

* ``sweep <experiment> [--profile quick|paper] [--executor inprocess|threads|processes|dask] [--workers N]
  [--address HOST:PORT] [--cache DIR] [--compile auto|always|never] [--cuda-graphs always|never] [--merge K]
  [--progress|--no-progress] [--threads N]``: run (or resume) an
  experiment's jobs into the results cache (by default one single-threaded process per core on a
  multi-core CPU; ``--merge K``: up to K train jobs of one config trained as one run, for a GPU), with a
  progress bar and ETA on stderr when it is a terminal. Ctrl-C stops it at
  once: finished jobs are already stored, running ones are cancelled, the exit status is 130.
* ``cache [--cache DIR] [--prune]``: what the results cache holds per experiment and profile (complete,
  stale, corrupt, missing; from which commit, device and date); ``--prune`` deletes stale, corrupt and
  partial entries (never a current one).
* ``list``: the experiments and their job counts per profile.
* ``estimate EXPERIMENT... [--profile quick|paper] [--steps S] [--threads N]``: how long their profile (default:
  paper) takes on this machine, one job after the other, from the first and last job run for S and 3S steps
  (:mod:`memcap.experiments.estimate`).
* ``bench [--models K] [--steps S] [--authors-steps A] [--workload NAME|small|paper|standard|large|all]
  [--device DEV] [--repeats R] [--compile auto|always|never] [--cuda-graphs always|never] [--json] [--threads N]``:
  stacked engine vs
  one-model-at-a-time loop vs the authors' recipes, and the fraction of peak.
* ``student-edition [--output DIR] [--pdf]``: build the book without solutions (strict, like the full build),
  with ``--pdf`` also its PDF.
* ``pdf [--build DIR] [--student-output DIR] [--edition full|student|both]``: the PDF editions
  (:mod:`memcap.textbook.pdf`): the full book's from its HTML build (``--build``, default: the book's root,
  where ``jupyter-book build .`` writes ``_build/``) into ``_build/html/memcap-textbook.pdf``, and the student
  edition, built with its PDF into ``--student-output`` (default ``_build/student``).
* ``doctor [--device DEV] [--models K] [--steps S] [--no-bench] [--threads N]``: check the book's code path
  on this machine's device (exit 1 on failure; see :mod:`memcap.doctor`).
* ``grade SUBMISSIONS --chapter X [--output DIR] [--cell-timeout S] [--timeout S] [--max-output BYTES]
  [--memory MIB] [--processes N] [--sandbox bwrap|none]``: execute every submitted notebook of a folder
  headlessly in a sandbox, check its answers to the chapter's exercises in the grader, write
  ``DIR/grades.csv``, one JSON file per student and a summary (see ``memcap.textbook.grading``); without a
  working bubblewrap it refuses (exit 2) unless ``--sandbox none`` is given.

``--version`` prints memcap's version and its engine version. ``--threads N`` sets torch's intra-op
threads (tiny models often run fastest on 1; at most the machine's logical CPUs), before the command or
after ``sweep``, ``estimate``, ``bench`` and ``doctor`` (after wins). A wrong argument prints one line and exits with
status 2, before any work: so do a device this machine lacks (``--device`` or ``MEMCAP_DEVICE``: an unknown
kind, a missing GPU, a CUDA index past the last, a malformed index), a ``MEMCAP_COMPILE`` or
``MEMCAP_CUDA_GRAPHS`` that is not a mode, ``--compile always`` (or ``MEMCAP_COMPILE=always``, for ``doctor`` and
``estimate`` too) where it cannot be done (no C++ compiler, not a CPU), ``--cuda-graphs always`` (or the
variable's) off CUDA, and a path that cannot serve (an empty one; ``--cache``/``MEMCAP_CACHE`` or ``--output``
naming a file or a path below one, or a folder that cannot be written for ``sweep``, ``cache --prune``,
``student-edition`` and ``grade``, found by creating and removing an empty folder there; ``grade``'s
``--output`` naming its submissions folder), a number past :data:`LARGEST_COUNT` (or the tighter bound of ``--workers``
and ``--models``), a Dask ``--address`` that does not parse or answer, and limits under which ``grade``'s trial
kernel cannot run. Ctrl-C ends any command with one line and status 130. Any other error keeps its traceback
(status 1); a closed stdout (``| head``, or none at all) ends the command quietly.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Callable

from memcap.experiments.syn_prose import count_noun


class UsageError(Exception):
    """A wrong argument found after parsing (e.g. in an environment variable): one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with argument errors reported in one line (no usage block), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with the commands listed one per line under "commands" (no ``COMMAND`` line above
    them) and a help column wide enough for ``student-edition``."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=21)

    def _format_action(self, action: argparse.Action) -> str:
        if isinstance(action, argparse._SubParsersAction):
            return "".join(self._format_action(choice) for choice in action._get_subactions())
        return super()._format_action(action)


LARGEST_COUNT = 10**9
"""The largest count, number of steps, of seconds or of MiB an option takes: beyond it no run of these commands
finishes (and torch's and the OS's 64-bit integers overflow further on)."""


def _positive_int(text: str, largest: float = LARGEST_COUNT) -> int:
    """argparse type: an integer from 1 to ``largest``."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    if value > largest:
        raise argparse.ArgumentTypeError(f"must be at most {largest:,}, got {text!r}")
    return value


def _at_most(largest: int) -> Callable[[str], int]:
    """argparse type: an integer from 1 to ``largest`` (for counts whose every unit costs a process, a model
    or a list entry up front)."""
    def parse(text: str) -> int:
        return _positive_int(text, largest)
    parse.__name__ = "positive integer"
    return parse


def _seconds(text: str) -> float:
    """argparse type: a number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, got {text!r}")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value


def _threads(text: str) -> int:
    """argparse type of ``--threads``: an integer from 1 to the machine's logical CPUs (torch overflows, or
    starts that many threads, on a larger one)."""
    value, cpus = _positive_int(text, float("inf")), os.cpu_count() or 1
    if value > cpus:
        raise argparse.ArgumentTypeError(f"must be at most the {count_noun(cpus, 'logical CPU')} of this machine, "
                                         f"got {text!r}")
    return value


class Progress:
    """A tqdm progress bar for ``run_sweep``'s ``progress(done, total, cached)`` callback.

    ``enabled=None`` shows it only when stderr is a terminal (so logs, pipes and the book stay clean).
    """

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label, self.enabled, self.bar = label, enabled, None

    def __call__(self, done: int, total: int, cached: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=cached, desc=self.label, unit="job", file=sys.stderr,
                            disable=None if self.enabled is None else not self.enabled, dynamic_ncols=True)
            self.bar.set_postfix_str(f"{cached} cached", refresh=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _named_path(text: str, what: str) -> Path:
    """``text`` as a path, refusing (UsageError) an empty or blank one: ``Path("")`` is the current folder, so an
    empty ``--output`` would write into it (for ``student-edition``, over the full edition's ``_build/html``)."""
    if not text.strip():
        got = "an empty string" if not text else f"{text!r} (only spaces)"
        raise UsageError(f"{what}: must name a folder, got {got}")
    return Path(text)


def _folder_for_writing(path: Path, what: str, *, writing: bool = True) -> None:
    """Refuse (UsageError) a path that cannot be a folder: a regular file, or a path below one; when
    ``writing``, also a folder that cannot be created or written. ``what`` names where the path came from."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{what}: {path} is a file, not a folder")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{what}: {path} cannot be a folder: {existing} is a file, not a folder")
    if writing:
        # A real probe, not os.access: root passes os.access everywhere, yet cannot write a read-only mount
        # or /proc. The probe folder is removed at once; nothing is created when the check fails.
        try:
            tempfile.TemporaryDirectory(dir=existing, prefix=".memcap-probe-").cleanup()
        except OSError as err:
            raise UsageError(f"{what}: {path} cannot be written: {existing} refuses a new folder "
                             f"({err.strerror or err})") from None


def _cache_root(args: argparse.Namespace, *, writing: bool) -> Path:
    """The results cache folder of ``--cache`` (else ``MEMCAP_CACHE``, else ``results/`` at the source checkout's
    root), checked before any work: it must be a folder (or not exist yet), and one that can be written when
    ``writing``."""
    from memcap.experiments.sweep import default_cache_dir

    what = "--cache" if args.cache is not None else \
        ("MEMCAP_CACHE" if os.environ.get("MEMCAP_CACHE", "").strip() else "the default cache")
    root = _named_path(args.cache, "--cache") if args.cache is not None else default_cache_dir()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{what}: {root} is a file, not a folder: the results cache must be a folder")
    _folder_for_writing(root, what, writing=writing)
    return root


def _device(args: argparse.Namespace) -> None:
    """Refuse (UsageError) a ``--device`` or ``MEMCAP_DEVICE`` this machine does not have, before any work:
    an unknown kind, a malformed index (``cuda:x``), a kind without its GPU, or a CUDA index past the last."""
    import torch

    from memcap.device import pick_device

    asked = getattr(args, "device", None)
    flag = "--device" if asked is not None else "MEMCAP_DEVICE"
    try:
        dev = pick_device(asked)
    except (ValueError, RuntimeError) as err:   # torch.device raises RuntimeError on 'cuda:x'
        raise UsageError(f"{flag}: {err}") from None
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        count = torch.cuda.device_count()
        names = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
        raise UsageError(f"{flag}: device {str(dev)!r} requested but this machine has "
                         f"{count_noun(count, 'CUDA device')} ({names})")


def _compile(args: argparse.Namespace) -> None:
    """Refuse (UsageError) a ``MEMCAP_COMPILE`` or ``MEMCAP_CUDA_GRAPHS`` that is not a mode, ``--compile
    always`` (or the variable's) where it cannot be done and ``--cuda-graphs always`` (or the variable's) off
    CUDA; ``args.compile`` and ``args.cuda_graphs`` become the modes in force."""
    from memcap.device import pick_device
    from memcap.train import graphs
    from memcap.train.compiled import ENV, compile_blocker, compile_mode

    flag = "--compile" if args.compile is not None else ENV
    graphs_flag = "--cuda-graphs" if args.cuda_graphs is not None else graphs.ENV
    try:
        mode = compile_mode(args.compile)
        graph_mode = graphs.graph_mode(args.cuda_graphs)
    except ValueError as err:
        raise UsageError(str(err)) from None
    device = pick_device(getattr(args, "device", None))
    blocker = compile_blocker(device)
    if mode == "always" and blocker is not None:
        raise UsageError(f"{flag}: 'always' cannot be honoured here: {blocker}; use auto or never")
    if graph_mode == "always" and device.type != "cuda":
        raise UsageError(f"{graphs_flag}: 'always' cannot be honoured here: CUDA graphs need a CUDA device, and "
                         f"this run is on {device}; use never")
    args.compile, args.cuda_graphs = mode, graph_mode


def _environment_modes(args: argparse.Namespace) -> None:
    """For the commands without ``--compile`` and ``--cuda-graphs`` (doctor, estimate): refuse (UsageError) a
    ``MEMCAP_COMPILE`` or ``MEMCAP_CUDA_GRAPHS`` that is not a mode or cannot be honoured on the device, as
    :func:`_compile` does for the flags (either would otherwise fail as a broken machine)."""
    _compile(argparse.Namespace(compile=None, cuda_graphs=None, device=getattr(args, "device", None)))


def _profile(args: argparse.Namespace) -> str:
    from memcap.experiments.sweep import current_profile

    if args.profile is not None:
        return args.profile
    try:
        return current_profile()
    except ValueError as err:
        raise UsageError(str(err)) from None


def _sweep(args: argparse.Namespace) -> int:
    """The compile and CUDA-graph modes travel to the jobs in ``MEMCAP_COMPILE`` and ``MEMCAP_CUDA_GRAPHS``: the
    workers of a pool, started by this process, inherit them; they are restored when the sweep ends (main() may
    be called again in one process)."""
    from memcap.train import graphs
    from memcap.train.compiled import ENV

    modes = {ENV: args.compile, graphs.ENV: args.cuda_graphs}
    before = {name: os.environ.get(name) for name in modes}
    os.environ.update(modes)
    try:
        return _run_sweep(args)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_sweep(args: argparse.Namespace) -> int:
    import signal

    from memcap import experiments
    from memcap.experiments.sweep import ResultCache, SweepInterrupted, abandon, make_executor, run_sweep_report

    profile = _profile(args)
    root = _cache_root(args, writing=True)
    _folder_for_writing(root / args.experiment, "--cache" if args.cache is not None else "the cache")
    job_list = experiments.jobs(args.experiment, profile)
    cache = ResultCache(root)
    workers = args.workers
    if args.executor is None:   # see memcap.experiments.sweep.default_executor
        from memcap.device import pick_device
        from memcap.experiments.sweep import default_executor

        args.executor, workers = default_executor(pick_device(None).type, len(job_list))
    try:
        executor = make_executor(args.executor, workers=workers, address=args.address,
                                 threads=args.threads if args.executor == "processes" else None)
    except ImportError as err:
        raise UsageError(str(err)) from None
    except (ValueError, OSError) as err:   # distributed's parse of --address, or no scheduler there
        if args.address is None:
            raise
        raise UsageError(f"--address {args.address!r}: {type(err).__name__}: {str(err).splitlines()[0]}") from None
    from memcap.experiments.sweep import CacheStoreError

    progress = Progress(f"{args.experiment} ({profile})", args.progress)
    try:
        report = run_sweep_report(args.experiment, job_list, executor=executor, cache=cache, progress=progress,
                                  checkpoint_every=args.checkpoint_every if args.checkpoint_every > 0 else float("inf"),
                                  merge=args.merge)
    except CacheStoreError as err:   # a path in the cache's way (nothing ran), or a store that failed
        raise UsageError(str(err).splitlines()[0]) from None
    except KeyboardInterrupt as stop:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not break the clean-up
        progress.close()
        abandon(executor)
        summary = stop.summary() if isinstance(stop, SweepInterrupted) else \
            f"interrupted: {args.experiment}: before any job finished; run the same command again to continue"
        print(summary, file=sys.stderr, flush=True)
        return 130
    except BaseException:
        progress.close()
        abandon(executor)
        raise
    progress.close()
    executor.shutdown(wait=True)
    replaced = [f"{n} replacing {f'a {what} entry' if n == 1 else f'{what} entries'}"
                for n, what in ((report.refreshed, "stale"), (report.corrupt, "corrupt")) if n]
    print(f"{args.experiment} ({profile}): {count_noun(len(job_list), 'job')}, {report.cached} from the cache, "
          f"{report.computed} computed{' (' + ', '.join(replaced) + ')' if replaced else ''}; cache: {cache.root}")
    return 0


def _cache(args: argparse.Namespace) -> int:
    """Report (and with ``--prune``, clean) the results cache. A ``--cache`` or ``MEMCAP_CACHE`` naming no folder is
    refused (exit 2); the default cache not made yet (a fresh clone: no sweep has run) is reported with every job
    missing. ``--prune`` looks only into the folders named after the experiments given (default: all), and refuses
    a folder that holds something but no experiment's folder: it is not a results cache."""
    from memcap import ENGINE_VERSION
    from memcap.experiments import EXPERIMENTS, cache_status
    from memcap.experiments.sweep import PRUNED, ResultCache

    unknown = [name for name in args.experiment if name not in EXPERIMENTS]
    if unknown:
        raise UsageError(f"experiment must be one of {EXPERIMENTS}, got {unknown[0]!r}")
    root = _cache_root(args, writing=args.prune)
    what = "--cache" if args.cache is not None else \
        ("MEMCAP_CACHE" if os.environ.get("MEMCAP_CACHE", "").strip() else "the default cache")
    names = tuple(dict.fromkeys(args.experiment)) if args.experiment else EXPERIMENTS
    cache = ResultCache(root)
    if not root.is_dir():
        if what != "the default cache":
            raise UsageError(f"{what}: {root} does not exist: there is no results cache there (a sweep makes one)")
        print(f"results cache {cache.root} does not exist yet: no sweep has stored a result"
              f"{' (nothing to prune)' if args.prune else ''}; `{args.prog} sweep EXPERIMENT` makes it")
    else:
        present = cache.experiments()
        if args.prune:
            if not present and any(root.iterdir()):
                raise UsageError(f"{what}: {root} holds no experiment's folder (such as {EXPERIMENTS[0]}/): it is not "
                                 "a memcap results cache, nothing pruned")
            removed = [path for name in names if name in present for path in cache.prune(name)]
            print(f"pruned {count_noun(len(removed), 'file')} (stale, legacy, corrupt or partial entries, orphan "
                  f"checkpoints) from {cache.root}")
        print(f"results cache {cache.root}")
    rows, disk = cache_status(root, names)
    print(f"{'experiment':15s} {'profile':7s} {'jobs':>5s} {'current':>8s} {'stale':>6s} {'newer':>6s} "
          f"{'corrupt':>8s} {'missing':>8s}  provenance of the current entries")
    for r in rows:
        print(f"{r.name:15s} {r.profile:7s} {r.jobs:5d} {r.current:8d} {r.stale:6d} {r.newer:6d} {r.corrupt:8d} "
              f"{r.missing:8d}  {r.provenance or '-'}")
    labels = {"newer": f"newer (engine > {ENGINE_VERSION})", "foreign": "not memcap's"}
    for name, counts in disk.items():
        print(f"{name}: files on disk: " + ", ".join(f"{n} {labels.get(status, status)}"
                                                     for status, n in sorted(counts.items())))
    found = set().union(*disk.values()) if disk else set()
    if found & set(PRUNED):
        again = " ".join(shlex.quote(a) for a in (*args.experiment, "--prune",
                                                  *(("--cache", args.cache) if args.cache else ())))
        print(f"stale, legacy, corrupt, partial and orphan files are never used; delete them with "
              f"`{args.prog} cache {again}`")
    if "newer" in found:
        print(f"newer files were made by a newer engine than this memcap's (version {ENGINE_VERSION}): this memcap "
              "cannot use them (a job that has only those counts as newer above) and --prune keeps them")
    if "foreign" in found:
        print("files not memcap's (not named as memcap names its files) are left alone, by --prune too")
    return 0


def _list(args: argparse.Namespace) -> int:
    from memcap import experiments

    for name in experiments.EXPERIMENTS:
        module = experiments.get(name)
        counts = ", ".join(f"{p}: {count_noun(len(module.jobs(p)), 'job')}" for p in experiments.PROFILES)
        print(f"{name:15s} {module.LABEL:11s} {counts}  {module.TITLE}")
    return 0


def _estimate(args: argparse.Namespace) -> int:
    import torch

    from memcap.experiments.estimate import duration, estimate_profile, format_estimate

    total = 0.0
    names = tuple(dict.fromkeys(args.experiment))   # each once, as `cache` reads them
    for name in names:
        found = estimate_profile(name, args.profile, args.steps)
        total += found.seconds
        print(format_estimate(found), flush=True)
    if len(names) > 1:
        print(f"total: about {duration(total)}, one job after the other ({torch.get_num_threads()} thread(s))")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from memcap.experiments.bench import (
        LARGE_WORKLOADS,
        PAPER_WORKLOADS,
        SMALL_WORKLOADS,
        WORKLOADS,
        format_bench,
        run_bench,
    )

    groups = {"all": WORKLOADS, "standard": SMALL_WORKLOADS + PAPER_WORKLOADS, "small": SMALL_WORKLOADS,
              "paper": PAPER_WORKLOADS, "large": LARGE_WORKLOADS}
    workloads = groups.get(args.workload, (args.workload,))
    result = run_bench(workloads, models=args.models, steps=args.steps, authors_steps=args.authors_steps,
                       device=args.device, repeats=args.repeats, compile=args.compile,
                       cuda_graphs=args.cuda_graphs)
    print(json.dumps(result, indent=1) if args.json else format_bench(result))
    return 0


def _student_edition(args: argparse.Namespace) -> int:
    from memcap.textbook.edition import build_student_edition

    if not (Path.cwd() / "_toc.yml").is_file():
        raise UsageError(f"root must be the book's folder (with _toc.yml), got {Path.cwd()}: run this command "
                         "from the book's root")
    _folder_for_writing(_named_path(args.output, "--output"), "--output")
    html = build_student_edition(Path.cwd(), args.output, pdf=args.pdf)
    print(f"student edition: {html / 'index.html'}")
    return 0


def _pdf(args: argparse.Namespace) -> int:
    from memcap.textbook.edition import build_student_edition
    from memcap.textbook.pdf import PDF_NAME, build_pdf

    root = Path.cwd()
    if not (root / "_toc.yml").is_file():
        raise UsageError(f"root must be the book's folder (with _toc.yml), got {root}: run this command "
                         "from the book's root")
    build = _named_path(args.build, "--build") if args.build is not None else root
    if args.edition in ("full", "both"):
        html = build / "_build" / "html"
        if not (html / "index.html").is_file() or not (build / "_build" / ".doctrees").is_dir():
            raise UsageError(f"--build: {build} holds no HTML build of the book ({html}/index.html): build the "
                             "site first (README, the build command) or name its --path-output with --build")
        print(f"full edition: {build_pdf(root, build)}")
    if args.edition in ("student", "both"):
        _folder_for_writing(_named_path(args.student_output, "--student-output"), "--student-output")
        html = build_student_edition(root, args.student_output, pdf=True)
        print(f"student edition: {html / PDF_NAME}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from memcap.doctor import run_doctor

    return 0 if run_doctor(args.device, bench_models=args.models, bench_steps=args.steps,
                           run_benchmark=not args.no_bench, command=f"{args.prog} {shlex.join(args.argv)}") else 1


def _grade(args: argparse.Namespace) -> int:
    from memcap.textbook.grading import Limits, grade_folder

    submissions, output = _named_path(args.submissions, "submissions"), _named_path(args.output, "--output")
    if not submissions.is_dir():
        what = "is a file, not a folder" if submissions.exists() else "does not exist"
        raise UsageError(f"submissions folder {args.submissions!r} {what}")
    _folder_for_writing(output, "--output")
    limits = Limits(memory=args.memory * 2**20, processes=args.processes)
    try:
        report = grade_folder(submissions, args.chapter, output, cell_timeout=args.cell_timeout,
                              timeout=args.timeout, max_output=args.max_output, sandbox=args.sandbox,
                              limits=limits, log=lambda line: print(line, file=sys.stderr, flush=True))
    except ValueError as err:
        raise UsageError(str(err)) from None
    print(report.summary())
    print(f"grades: {report.csv_path}\nsummary: {report.summary_path}")
    return 0


DESCRIPTION = """\
The command line of the memcap textbook: run the experiments at the papers' scale, look after the
results cache, time the training engine, check this machine's device, build the student edition and
grade the students' notebooks. A wrong argument prints one line and exits with status 2."""


def build_parser(prog: str = "python -m memcap") -> argparse.ArgumentParser:
    """The argument parser of the command line, named ``prog`` in its messages (reads no environment
    variable, so ``--help`` always works)."""
    from memcap._version import ENGINE_VERSION, __version__
    from memcap.experiments import EXPERIMENTS
    from memcap.experiments.bench import WORKLOADS
    from memcap.experiments.sweep import EXECUTORS, PROFILES
    from memcap.textbook.grading import SANDBOXES
    from memcap.train.compiled import COMPILE_MODES
    from memcap.train.graphs import GRAPH_MODES

    compile_help = ("torch.compile for the training step: auto (default, or MEMCAP_COMPILE): on a CPU with a C++ "
                    "compiler, for jobs of 10,000 steps and more (the paper profiles); always; never")
    graphs_help = ("record each stack's training step once as a CUDA graph and replay it (CUDA only; the same "
                   "kernels on the same data as the eager step): always, or never (default, or MEMCAP_CUDA_GRAPHS)")

    cache_help = "results cache folder (default: MEMCAP_CACHE, else results/ at the source checkout's root)"

    parser = _Parser(prog=prog, description=DESCRIPTION, formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", help="print memcap's version and engine version, then exit",
                        version=f"memcap {__version__} (engine version {ENGINE_VERSION})")
    threads_help = "torch intra-op threads, from 1 to the machine's logical CPUs (tiny models often run fastest on 1)"
    parser.add_argument("--threads", type=_threads, default=None, metavar="N",
                        help=threads_help + "; also accepted after sweep, estimate, bench and doctor, where it wins")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    def command(name: str, line: str, run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        """A subcommand: ``line`` is its one line in ``--help``; ``run(args)`` returns the exit status."""
        made = sub.add_parser(name, help=line, description=line[0].upper() + line[1:] + ".")
        made.set_defaults(run=run, prog=prog)
        return made

    def threads(subparser: argparse.ArgumentParser) -> None:
        """``--threads`` after the subcommand too; absent there, the value before it stands (SUPPRESS)."""
        subparser.add_argument("--threads", type=_threads, default=argparse.SUPPRESS, metavar="N",
                               help=threads_help + "; wins over --threads before the command")

    sweep = command("sweep", "run or resume an experiment's sweep into the results cache", _sweep)
    sweep.add_argument("experiment", choices=EXPERIMENTS, help="the experiment (see the list command)")
    sweep.add_argument("--profile", choices=PROFILES, default=None,
                       help="grid to run (default: the MEMCAP_PROFILE environment variable, else quick)")
    sweep.add_argument("--executor", choices=EXECUTORS, default=None,
                       help="where the jobs run: inprocess (one after the other), threads or processes (a local "
                            "pool of --workers), dask (a Dask cluster at --address, else a local one); default: "
                            "one single-threaded process per core on a multi-core CPU with several jobs, else "
                            "inprocess")
    sweep.add_argument("--workers", type=_at_most(1024), default=None,
                       help="pool size of the threads and processes executors, or of a local Dask cluster")
    sweep.add_argument("--address", default=None, help="Dask scheduler address (--executor dask; default: a "
                                                       "local cluster)")
    sweep.add_argument("--cache", default=None, help=cache_help)
    sweep.add_argument("--compile", choices=COMPILE_MODES, default=None, help=compile_help)
    sweep.add_argument("--cuda-graphs", choices=GRAPH_MODES, default=None, help=graphs_help)
    sweep.add_argument("--checkpoint-every", type=_seconds, default=60.0, metavar="SECONDS",
                       help="save a running job's training state this often, beside its cache entry, so that a "
                            "sweep stopped mid-job goes on from there when run again (default 60; 0: no checkpoints)")
    sweep.add_argument("--merge", type=_positive_int, default=1, metavar="K",
                       help="train up to K jobs with the same training config as one run, each job's result "
                            "stored as its own (for a GPU, where one step of several jobs' models costs about "
                            "what one job's does; default 1: every job alone)")
    sweep.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="show a progress bar on stderr (default: only when stderr is a terminal)")
    threads(sweep)
    cache = command("cache", "show the results cache; --prune deletes unusable entries", _cache)
    cache.add_argument("experiment", nargs="*", default=[], help="experiments to report and prune (default: all)")
    cache.add_argument("--cache", default=None, help=cache_help)
    cache.add_argument("--prune", action="store_true",
                       help="delete the stale (older engine), legacy, corrupt and partial entries and orphan "
                            "checkpoints of these experiments; never a current entry, one of a newer engine, a "
                            "checkpoint a sweep goes on from, nor a file memcap did not name")
    command("list", "list the experiments and their job counts per profile", _list)
    estimate = command("estimate", "estimate a profile's time here from two jobs run briefly",
                       _estimate)
    estimate.add_argument("experiment", nargs="+", choices=EXPERIMENTS, metavar="EXPERIMENT",
                          help="one or more experiments (see the list command)")
    estimate.add_argument("--profile", choices=PROFILES, default="paper", help="grid to estimate (default: paper)")
    estimate.add_argument("--steps", type=_positive_int, default=40, metavar="S",
                          help="the first and last job run S and 3S steps (default 40)")
    threads(estimate)
    bench = command("bench", "time the stacked engine against one-at-a-time training",
                    _bench)
    bench.add_argument("--models", type=_at_most(10_000), default=16, help="models per workload (default 16)")
    bench.add_argument("--steps", type=_positive_int, default=200,
                       help="training steps per model in the engine, stacked and one at a time (default 200)")
    bench.add_argument("--workload", default="standard", choices=(*WORKLOADS, "small", "paper", "standard", "large",
                                                                   "all"),
                       help="one workload, 'small' (mha, aot), 'paper' (a job each of dana_fig1a, dana_fig4, "
                            "mahdavi_fig2a), 'standard' (both: the default), 'large' (mahdavi_fig2c, the largest "
                            "paper job, for a GPU) or 'all'")
    bench.add_argument("--authors-steps", type=_positive_int, default=None,
                       help="steps per model in the authors' recipes (default: steps // 10, at least 2)")
    bench.add_argument("--repeats", type=_positive_int, default=3,
                       help="timings of each side, in turn; the median counts (default 3)")
    bench.add_argument("--device", default=None,
                       help="cuda, cuda:K, mps or cpu (default: MEMCAP_DEVICE, else the GPU if any, else cpu)")
    bench.add_argument("--json", action="store_true", help="print the whole result as JSON")
    bench.add_argument("--compile", choices=COMPILE_MODES, default=None, help=compile_help)
    bench.add_argument("--cuda-graphs", choices=GRAPH_MODES, default=None, help=graphs_help)
    threads(bench)
    student = command("student-edition", "build the book without solutions (from the book's root)",
                      _student_edition)
    student.add_argument("--output", default="_build/student", help="output folder (default: _build/student)")
    student.add_argument("--pdf", action="store_true", help="also print its PDF (see the pdf command)")
    pdf = command("pdf", "print the book and its student edition as PDF", _pdf)
    pdf.add_argument("--build", default=None, help="the full book's HTML build: the --path-output of jupyter-book "
                                                   "build (default: the book's root, holding _build/)")
    pdf.add_argument("--student-output", default="_build/student",
                     help="output folder of the student edition and its PDF (default: _build/student)")
    pdf.add_argument("--edition", choices=("full", "student", "both"), default="both",
                     help="which PDF to make (default: both)")
    doctor = command("doctor", "check that this machine's device runs the book's code",
                     _doctor)
    doctor.add_argument("--device", default=None,
                        help="cuda, cuda:K, mps or cpu (default: MEMCAP_DEVICE, else the GPU if any, else cpu)")
    doctor.add_argument("--models", type=_at_most(10_000), default=8, help="models in the benchmark (default 8)")
    doctor.add_argument("--steps", type=_positive_int, default=50, help="steps in the benchmark (default 50)")
    doctor.add_argument("--no-bench", action="store_true", help="skip the stacked-vs-loop benchmark")
    threads(doctor)
    grade = command("grade", "run submitted notebooks headlessly and check their answers", _grade)
    grade.add_argument("submissions", help="folder of NAME.ipynb files (or NAME/ folders with one notebook)")
    grade.add_argument("--chapter", required=True, help="chapter whose exercises are graded, e.g. mahdavi/skip")
    grade.add_argument("--output", default="grades", help="folder for grades.csv, summary.txt and the executed "
                                                          "notebooks (default: grades)")
    grade.add_argument("--cell-timeout", type=_positive_int, default=120, help="seconds per cell (default 120)")
    grade.add_argument("--timeout", type=_positive_int, default=900, help="seconds per notebook (default 900)")
    grade.add_argument("--max-output", type=_positive_int, default=1_000_000,
                       help="bytes of output kept per notebook (default 1000000)")
    grade.add_argument("--memory", type=_positive_int, default=4096,
                       help="MiB of address space per kernel process (default 4096)")
    grade.add_argument("--processes", type=_positive_int, default=256,
                       help="processes and threads a kernel may run (default 256)")
    grade.add_argument("--sandbox", choices=SANDBOXES, default="bwrap",
                       help="bwrap (default): bubblewrap sandbox, refuses to run without it; none: no "
                            "sandbox, honour-system grades")
    return parser


def _check_combinations(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Flags that only some executors use are refused elsewhere (exit 2), not silently ignored."""
    if args.command != "sweep":
        return
    if args.address is not None and args.executor != "dask":
        parser.error(f"--address is only used by --executor dask, not by --executor {args.executor or 'default'}")
    if args.workers is not None and args.executor in (None, "inprocess"):
        parser.error("--workers is only used by --executor threads, processes or dask, "
                     + ("not by --executor inprocess" if args.executor else "so name the executor"))
    if args.workers is not None and args.address is not None:
        parser.error("--workers sets the size of a local Dask cluster; with --address the cluster's own workers "
                     "are used")


def main(argv: list[str] | None = None, *, prog: str = "python -m memcap") -> int:
    """Entry point; returns the exit status: 0, 2 for a wrong argument (one line naming it), 130 when a sweep
    was interrupted. Other errors propagate with their traceback. ``prog`` names the command in messages."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)   # the command line, for the records that keep it
    _check_combinations(parser, args)
    if args.threads is not None:
        import torch
        torch.set_num_threads(args.threads)
    try:
        if args.command in ("sweep", "bench", "doctor", "estimate"):
            _device(args)
        if args.command in ("sweep", "bench"):
            _compile(args)
        if args.command in ("doctor", "estimate"):   # they train with the modes of the environment
            _environment_modes(args)
        return args.run(args)
    except UsageError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2


def cli(argv: list[str] | None = None) -> None:
    """Run :func:`main` and exit: ``python -m memcap`` and the ``memcap`` console script of pyproject.toml.
    After an interruption it exits at once (a thread pool's running jobs cannot be stopped, and Python
    would otherwise wait for them at exit only to drop their results)."""
    script = Path(sys.argv[0]).name
    prog = script if script == "memcap" else "python -m memcap"
    try:
        code = main(argv, prog=prog)
        if sys.stdout is not None:   # None when started with stdout closed (`>&-`): print wrote nothing
            sys.stdout.flush()
    except BrokenPipeError:   # the reader of stdout left (`| head`): no traceback, and none again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt:   # Ctrl-C outside a sweep's own handling (e.g. while modules load)
        if sys.stderr is not None:
            print(f"{prog}: interrupted", file=sys.stderr)
        code = 130
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":
    cli()

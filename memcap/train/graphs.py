"""CUDA graphs for the training step: a stack's eager step recorded once, then replayed with one launch.

On a GPU the eager step of a small stack is a few hundred short kernels, and the card waits on their
launches (on an H200, a stacked step of dana_fig1a or mahdavi_fig2a took 5-6 ms for well under 1 % of the
card's arithmetic). A CUDA graph records those kernels once and replays them as one launch. The step is
written so that it can be recorded: it reads its inputs from fixed buffers (:class:`StaticStep` copies the
step's batch indices, learning rates and active flags into them), changes the weights, Adam's moments and
step counts in place, allocates nothing that outlives it, and reads nothing back to the host (which models
are active is known on the host, see ``memcap.train.loop``). Replaying it runs the same kernels on the same
data as the eager step, so the numbers are the eager step's on that GPU (``tests/test_gpu.py`` compares them).

Mode: 'never' (the default, until the graphs have been measured on a GPU: ``tests/gpu_scale.sh``) or
'always', from the ``cuda_graphs`` argument of :func:`memcap.train.train_models`, else the environment variable
``MEMCAP_CUDA_GRAPHS``. On a CPU 'always' runs the same step on its fixed buffers without recording it, which is
how the CPU tests check that the step is ready to be recorded (``tests/test_graphs.py``).

Recording goes in two parts, and either may fail:

* the warm-up (eager steps on a side stream, after which the stack's state is put back, see
  :func:`kept_state`) fails as the eager step would, so its error is raised: out of memory there
  (:func:`memcap.train.memory.out_of_memory`) makes the loop train the stack as two smaller ones
  (``memcap.train.loop``);
* the capture runs nothing and changes no state. Should it fail after the warm-up succeeded (its memory pool
  could not grow, or torch refused an operation while capturing), the eager step is known to fit and
  computes the same numbers: the stack trains with it from then on, and a :class:`GraphWarning` says why.

Between the two, the warm-up's freed blocks go back to the driver (``torch.cuda.empty_cache``): the graph's
memory pool takes fresh memory, and during a capture torch's allocator cannot give cached blocks back to
make room.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import torch

from memcap._checks import mode_from
from memcap.train.memory import out_of_memory

GRAPH_MODES = ("always", "never")
"""'always': steps through :class:`StaticStep` (recorded as CUDA graphs on CUDA); 'never': the eager step."""

ENV = "MEMCAP_CUDA_GRAPHS"

WARMUP = 3
"""Eager runs on a side stream before recording (CUDA's rule: let lazy initialisation happen outside the graph).
They change nothing: the stack's state is put back afterwards."""


class GraphWarning(UserWarning):
    """A stack's step could not be recorded as a CUDA graph (not for lack of memory); it trains eagerly."""


@contextmanager
def kept_state(state: Sequence[torch.Tensor]) -> Iterator[None]:
    """Run the block, then put every tensor of ``state`` back as it was (copied in place), even when the
    block raised: the warm-up of a recording trains, and must leave no trace."""
    kept = [t.detach().clone() for t in state]
    try:
        yield
    finally:
        with torch.no_grad():
            for t, k in zip(state, kept):
                t.copy_(k)
        del kept


def graph_mode(mode: str | None = None) -> str:
    """The mode in force: ``mode`` if given, else the environment variable ``MEMCAP_CUDA_GRAPHS``, else 'never'."""
    return mode_from(mode, GRAPH_MODES, "cuda_graphs", ENV, "never")


class StaticStep:
    """One training step of a stack on fixed input buffers; on CUDA recorded as a CUDA graph and replayed.

    ``body(idx, lr, active, all_active)`` does the step from the buffers ``idx`` (m, B) batch indices, ``lr``
    (m,) learning rates and ``active`` (m,) flags, changing ``state`` (the tensors it updates in place: the
    stack's weights, Adam's moments and step counts, the gradient buffer) and nothing else. One graph is
    recorded per value of ``all_active`` (Adam's in-place branch and its masked one), in one memory pool.
    """

    def __init__(self, body: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], None],
                 idx: torch.Tensor, lr: torch.Tensor, active: torch.Tensor, state: Sequence[torch.Tensor]) -> None:
        self.body = body
        self.idx, self.lr, self.active = idx.clone(), lr.clone(), active.clone()
        self.state = list(state)
        self.device = idx.device
        self.graphs: dict[bool, torch.cuda.CUDAGraph] = {}
        self.pool = None
        self.eager = False   # set when a capture failed (GraphWarning): the eager step from then on

    def __call__(self, idx: torch.Tensor, lr: torch.Tensor, active: torch.Tensor, all_active: bool) -> None:
        self.idx.copy_(idx)
        self.lr.copy_(lr)
        self.active.copy_(active)
        if self.eager or self.device.type != "cuda":
            self.body(self.idx, self.lr, self.active, all_active)
            return
        graph = self.graphs.get(all_active)
        if graph is None:
            self._warm_up(all_active)
            try:
                graph = self._capture(all_active)
            except Exception as err:   # noqa: BLE001 - whatever failed, the eager step fits and computes the same
                self._give_up(err)
                self.body(self.idx, self.lr, self.active, all_active)
                return
            self.graphs[all_active] = graph
        graph.replay()

    def _warm_up(self, all_active: bool) -> None:
        """:data:`WARMUP` eager steps on a side stream, the state put back after them (even when one raised)."""
        with kept_state(self.state):
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            try:
                with torch.cuda.stream(side):
                    for _ in range(WARMUP):
                        self.body(self.idx, self.lr, self.active, all_active)
            finally:   # the state is put back on the current stream, after the side stream's steps
                torch.cuda.current_stream(self.device).wait_stream(side)

    def _capture(self, all_active: bool) -> torch.cuda.CUDAGraph:
        """The step recorded (not run) into a new graph in the stack's pool, the warm-up's cached blocks
        given back to the driver first."""
        torch.cuda.synchronize(self.device)
        torch.cuda.empty_cache()
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            self.body(self.idx, self.lr, self.active, all_active)
        return graph

    def _give_up(self, err: Exception) -> None:
        """After a failed capture: drop the graphs and their pool, warn, and take the eager step from here on
        (raise ``err`` if the stream is somehow still capturing: nothing could run on it)."""
        if self.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise err
        self.graphs.clear()
        self.pool = None
        self.eager = True
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        said = (str(err).splitlines() or [""])[0]
        if out_of_memory(err) and "out of memory" not in said.lower():   # torch's error may be the capture's end
            said += ", after the device ran out of memory"
        warnings.warn(f"recording the step as a CUDA graph failed ({type(err).__name__}: {said}); this stack "
                      "trains with the eager step, which computes the same numbers", GraphWarning, stacklevel=3)

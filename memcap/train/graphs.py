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
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from memcap._checks import mode_from

GRAPH_MODES = ("always", "never")
"""'always': steps through :class:`StaticStep` (recorded as CUDA graphs on CUDA); 'never': the eager step."""

ENV = "MEMCAP_CUDA_GRAPHS"

WARMUP = 3
"""Eager runs on a side stream before recording (CUDA's rule: let lazy initialisation happen outside the graph).
They change nothing: the stack's state is put back afterwards."""


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

    def __call__(self, idx: torch.Tensor, lr: torch.Tensor, active: torch.Tensor, all_active: bool) -> None:
        self.idx.copy_(idx)
        self.lr.copy_(lr)
        self.active.copy_(active)
        if self.device.type != "cuda":
            self.body(self.idx, self.lr, self.active, all_active)
            return
        graph = self.graphs.get(all_active)
        if graph is None:
            graph = self.graphs[all_active] = self._record(all_active)
        graph.replay()

    def _record(self, all_active: bool) -> torch.cuda.CUDAGraph:
        kept = [t.detach().clone() for t in self.state]
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                self.body(self.idx, self.lr, self.active, all_active)
        torch.cuda.current_stream(self.device).wait_stream(side)
        with torch.no_grad():   # the warm-up trained: put the state back
            for t, k in zip(self.state, kept):
                t.copy_(k)
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):   # recorded, not run
            self.body(self.idx, self.lr, self.active, all_active)
        return graph

"""Checkers of the exercises of *Mahdavi et al.'s Theorem 1 and Remark 1* (``book/mahdavi/theorem1.md``)."""
from __future__ import annotations

from dataclasses import replace

import torch

from memcap import bounds, data, models
from memcap.textbook.exercises.checking import (
    call,
    case,
    checker,
    close,
    expect,
    fail,
    number,
    numbers_by_key,
    on_device,
    to_case_device,
)

CHAPTER = "book/mahdavi/theorem1"
HEAD_DIMS = (8, 16, 32, 64)


@checker("ex-mahdavi-theorem1-2", CHAPTER)
def examples_per_parameter(ratios, best):
    """Examples guaranteed per parameter for d_h = 8, 16, 32, 64 (d = 64, n = 32, H = 40, d_v = d_out = 1),
    to three significant digits, and the most parameter-efficient d_h."""
    given = numbers_by_key(ratios, HEAD_DIMS, "ratios")
    for dh in HEAD_DIMS:
        with case(f"d_h = {dh}"):
            expected = bounds.mha_capacity(40, 32, dh) / bounds.mha_param_count(40, 64, dh, 1, 1)
            close(given[dh], expected, "the examples per parameter", rtol=1e-4, digits=3,
                  hint="divide Theorem 1's H(min(n, d_h) - 1) + 1 by the parameter count "
                       "2Hdd_h + Hdd_v + dd_out, with d_v = d_out = 1")
    with case("the most parameter-efficient d_h"):
        number(best, "best, a head dimension,")
        expect(best in HEAD_DIMS, f"best should be one of {list(HEAD_DIMS)}", got=best)
        expect(best == 32, "that head dimension is not the most parameter-efficient one", got=best,
               hint="below n the ratio increases with d_h; beyond n the capacity stops growing while "
                    "the parameter count keeps growing")


def _class_tasks():
    """Three classification tasks of the checker's own, on the CPU.

    The queries are scaled by 5 (entries in [0, 5]): with queries in [0, 1] the skip's term W_D^T e
    adds less than the one-hot margin to every score, so a layer memorized without the skip and then
    switched to ``skip=True`` would still put every arg-max right.
    """
    gen = torch.Generator().manual_seed(314)
    for n, d, heads, dh, shared, classes in ((8, 16, 5, 8, True, 10), (6, 10, 4, 6, False, 7),
                                             (8, 16, 3, 4, True, 10)):
        T = bounds.mha_capacity(heads, n, dh)
        task = data.mahdavi_task(T, n, d, shared=shared, task="classification", classes=classes,
                                 generator=gen, dtype=torch.float64, device="cpu")
        task = replace(task, queries=5 * task.queries)
        context = "shared context" if shared else "one context per example"
        yield (f"T = {T}, n = {n}, d = {d}, H = {heads}, d_h = {dh}, {classes} classes, {context}",
               task, classes, heads, dh)


@checker("ex-mahdavi-theorem1-3", CHAPTER)
def memorizes_every_class(memorize_classes):
    """A function (contexts, queries, labels, classes, heads, head_dim) -> MHAParams whose layer, with
    the skip connection, puts the arg-max of its output on every example's class, at Theorem 1's
    capacity; three tasks (shared and per-example contexts, d_h = n and d_h < n)."""
    for description, task, classes, heads, dh in _class_tasks():
        with case(description):
            params = call(memorize_classes, *to_case_device(task.contexts, task.queries, task.labels), classes,
                          heads, dh)
            if not isinstance(params, models.MHAParams):
                fail("your function should return the layer's weights (memcap.models.MHAParams)",
                     got=type(params).__name__, hint="return what mahdavi.memorize returns")
            params = on_device(params, task.queries.device)
            expect(params.skip, "the layer should use the skip connection", got="skip=False",
                   hint="the exercise asks for mahdavi.memorize(..., skip=True)")
            out = models.mha_forward(params, task.contexts, task.queries)
            expect(tuple(out.shape) == (len(task.labels), classes),
                   "the layer should output one score per class", expected=(len(task.labels), classes),
                   got=tuple(out.shape), hint="encode each label as a one-hot vector, so d_out = classes")
            wrong = (out.argmax(dim=1) != task.labels).nonzero().flatten().tolist()
            if wrong:
                t = wrong[0]
                fail(f"{len(wrong)} of {len(task.labels)} examples get the wrong class",
                     expected=f"class {int(task.labels[t])} for example {t}",
                     got=f"class {int(out[t].argmax())}",
                     hint="memorize the one-hot label vectors (float64), not the class numbers")

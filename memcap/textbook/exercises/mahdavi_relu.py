"""Checkers of the exercises of *Attention versus ReLU networks* (``book/mahdavi/relu.md``)."""
from __future__ import annotations

import math
import random

import torch

from memcap import bounds
from memcap.construct import mahdavi_limits, relu_exact
from memcap.construct.mahdavi_limits import ReLUFit
from memcap.construct.relu_exact import ExactReLUBound
from memcap.textbook.exercises.checking import (
    case,
    checker,
    close,
    expect,
    fail,
    number,
    numbers_by_key,
    on_device,
)

CHAPTER = "book/mahdavi/relu"
OUT_DIMS = (1, 64)


@checker("ex-mahdavi-relu-2", CHAPTER)
def relu_against_attention(relu_examples, relu_parameters, attention_examples, attention_parameters):
    """Proposition 3's bound (or its floor) and the ReLU network's parameter count for n = 32, d = 64,
    m = 40 and d_out = 1, 64 (dicts keyed by d_out), then Theorem 1's guarantee and the parameter count
    of the attention layer with H = 40, d_h = 32, d_v = d_out = 1."""
    examples = numbers_by_key(relu_examples, OUT_DIMS, "relu_examples")
    parameters = numbers_by_key(relu_parameters, OUT_DIMS, "relu_parameters")
    for out in OUT_DIMS:
        with case(f"ReLU network, d_out = {out}"):
            bound = bounds.relu_capacity(32, 40, out)
            value = number(examples[out], f"relu_examples[{out}]")    # a tensor or a SymPy floor too
            if value != math.floor(bound):
                close(value, bound, "the bound on the examples", rtol=1e-6,
                      hint="Proposition 3: (n+1)m/d_out + m + 1; each label now carries d_out numbers")
            close(parameters[out], bounds.relu_param_count(32, 64, 40, out), "the parameter count",
                  hint="the input is the flattened example, of dimension (n+1)d; count both layers' "
                       "weights and biases")
    with case("attention, H = 40, d_h = 32"):
        close(attention_examples, bounds.mha_capacity(40, 32, 32), "the guaranteed examples",
              hint="Theorem 1: H(min(n, d_h) - 1) + 1")
        close(attention_parameters, bounds.mha_param_count(40, 64, 32, 1, 1), "the parameter count",
              hint="2Hdd_h + Hdd_v + dd_out with d_v = d_out = 1")


KEEP, N_TOKENS = 7, 2   # the exercise keeps 7 examples; the data have n = 2 tokens


def _first_examples() -> tuple[torch.Tensor, torch.Tensor]:
    """The flattened inputs (7, 9) and labels (7, 1) of the first 7 examples of the chapter's data set
    (its "See it run" section: integer points of seed 0, labels from random.Random(1), one shared
    context). The chapter's solution passes this checker, so a change there that this does not follow
    fails the build."""
    points = relu_exact.integer_points_in_general_position(10, N_TOKENS, seed=0)
    rng = random.Random(1)
    labels = [rng.randint(-3, 3) for _ in range(10)]
    contexts = torch.eye(N_TOKENS, 3, dtype=torch.float64, device="cpu")
    queries = torch.cat([torch.zeros(10, 1, dtype=torch.float64, device="cpu"),
                         torch.tensor(points, dtype=torch.float64, device="cpu")], dim=1)
    inputs = mahdavi_limits.fcn_inputs(contexts, queries)
    return inputs[:KEEP], torch.tensor(labels[:KEEP], dtype=torch.float64, device="cpu")[:, None]


@checker("ex-mahdavi-relu-3", CHAPTER)
def zero_certificate(certificate, fit):
    """The exact certificate on the first T = 7 = m(n+1)+1 examples of the chapter's data set (it must
    be exactly zero, from the 44 activation patterns of 7 points in general position in the plane) and
    the ReLU fit on the same 7 examples (m = 2 units, inputs of width (n+1)d = 9; its reported residual
    is the best network's residual on them)."""
    with case("the certificate"):
        if not isinstance(certificate, ExactReLUBound):
            fail("certificate should be what exact_relu_residual_bound returns (an ExactReLUBound)",
                 got=type(certificate).__name__)
        # Cover's count 2 (C(T-1, 0) + C(T-1, 1) + C(T-1, 2)) of one unit's patterns pins T = 7 (5 and 6
        # points give a zero bound too, so the bound alone cannot tell)
        patterns = 2 * sum(math.comb(KEEP - 1, i) for i in range(N_TOKENS + 1))
        expect(certificate.patterns == patterns, "the certificate should be computed on the first 7 points",
               expected=f"{patterns} activation patterns (7 points)", got=f"{certificate.patterns} patterns",
               hint="keep only the first 7 points and labels (x[:7], y[:7])")
        expect(certificate.squared == 0, "with T <= m(n+1)+1 the exact bound should be exactly zero",
               got=f"squared bound {certificate.squared}",
               hint="keep only the first 7 points and labels (x[:7], y[:7]); with one point more the "
                    "subspaces W(D_1, ..., D_m) no longer reach every label vector")
    with case("the fit"):
        if not isinstance(fit, ReLUFit):
            fail("fit should be what fit_relu returns (a ReLUFit)", got=type(fit).__name__)
        expect(fit.best.hidden == 2, "the network should have m = 2 hidden units", got=fit.best.hidden)
        width = fit.best.W_1.shape[0]
        expect(width == 9, "the network should read the flattened examples, of width (n+1)d = 9",
               got=width, hint="train on X_fcn[:7], the flattened inputs, not on the reduced points x")
        residual = fit.best_residual
        expect(math.isfinite(residual) and residual >= 0, "the residuals should be finite", got=residual)
        inputs, labels = _first_examples()
        best = on_device(fit.best, "cpu")
        on_seven = float((mahdavi_limits.relu_forward(best, inputs.to(best.W_1.dtype)) - labels).norm())
        expect(math.isclose(on_seven, residual, rel_tol=1e-4, abs_tol=1e-9),
               "the fit should be trained on the first 7 examples only",
               got=f"residual {residual:.4g} reported, {on_seven:.4g} on the first 7 examples",
               hint="train on X_fcn[:7] and labels[:7]")

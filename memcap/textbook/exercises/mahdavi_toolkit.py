"""Checkers of the exercises of *The linear-algebra toolkit* (``book/mahdavi/toolkit.md``)."""
from __future__ import annotations

import sympy as sp
import torch

from memcap import linalg
from memcap.textbook.exercises.checking import (
    call,
    case,
    checker,
    close,
    expect,
    fail,
    number,
    tensor_answer,
    to_case_device,
)

CHAPTER = "book/mahdavi/toolkit"


def _symbol(expression, what: str) -> sp.Symbol:
    expect(isinstance(expression, sp.Basic), f"{what} should be a SymPy expression in lambda",
           got=type(expression).__name__)
    free = sorted(expression.free_symbols, key=str)
    expect(len(free) == 1, f"{what} should depend on the one symbol lambda",
           got=f"free symbols {[str(x) for x in free]}", hint="n = 5 is a number here, lambda a symbol")
    return free[0]


@checker("ex-mahdavi-toolkit-2", CHAPTER)
def shifted_identity(det_5, eigenvalues_5, lost_at):
    """det(I_5 + (lambda/5) 1 1^T) as a SymPy expression in one symbol (any name), its eigenvalues as
    a dict {eigenvalue: multiplicity} (as SymPy's eigenvals gives), and the value of lambda at which
    the shift e_i -> e_i + lambda e_bar destroys independence."""
    with case("the determinant"):
        lam = _symbol(det_5, "the determinant")
        if sp.simplify(det_5 - (1 + 5 * lam)) == 0:
            fail("the determinant is not right", got=det_5,
                 hint="the matrix is I + (lambda/n) 1 1^T, with the factor 1/n")
        expect(sp.simplify(det_5 - (1 + lam)) == 0, "the determinant is not right", got=det_5,
               hint="1 1^T has eigenvalue n on the vector 1 and 0 on its orthogonal complement")
    with case("the eigenvalues"):
        expect(isinstance(eigenvalues_5, dict), "the eigenvalues should be a dict {eigenvalue: "
               "multiplicity}", got=type(eigenvalues_5).__name__, hint="Matrix.eigenvals() gives one")
        counts = {ev: number(k, f"the multiplicity of {ev}") for ev, k in eigenvalues_5.items()}
        expect(all(k.is_integer() and k >= 1 for k in counts.values()),
               "each multiplicity should be a whole number >= 1", got=list(counts.values()))
        total = int(sum(counts.values()))
        expect(total == 5, "the multiplicities should add up to n = 5",
               got=f"{total}, over {len(counts)} entr{'ies' if len(counts) != 1 else 'y'}")
        want = {sp.expand(1 + lam): 1, sp.Integer(1): 4}
        try:
            got = {sp.expand(sp.sympify(ev)): int(k) for ev, k in counts.items()}
        except (sp.SympifyError, TypeError, AttributeError):
            fail("each eigenvalue should be a SymPy expression in lambda", got=list(eigenvalues_5))
        expect(got == want, "the eigenvalues or their multiplicities are not right",
               got=", ".join(f"{ev} (x{k})" for ev, k in got.items()),
               hint="the all-ones direction is stretched; the n - 1 directions orthogonal to it are "
                    "left alone")
    with case("where independence is lost"):
        close(lost_at, -1.0, "lambda", atol=1e-12,
              hint="independence is lost where the determinant vanishes")


def _low_rank(rows: int, cols: int, rank: int, seed: int) -> torch.Tensor:
    """A random rows x cols matrix of rank ``rank``, on the CPU."""
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, rank, generator=gen, dtype=torch.float64, device="cpu")
            @ torch.randn(rank, cols, generator=gen, dtype=torch.float64, device="cpu"))


@checker("ex-mahdavi-toolkit-3", CHAPTER)
def rank_lowering(rank_lowering_perturbation):
    """A function A -> Delta that lowers the rank of A with the smallest spectral norm: rank(A + Delta)
    < rank(A) and ||Delta||_2 <= sigma_min(A) (its smallest nonzero singular value), on matrices of
    ranks 3, 4 and 6 of the checker's own."""
    for rows, cols, rank, seed in ((10, 6, 3, 31), (20, 8, 4, 32), (12, 9, 6, 33)):
        with case(f"a {rows} x {cols} matrix of rank {rank}"):
            A = _low_rank(rows, cols, rank, seed)
            delta = call(rank_lowering_perturbation, to_case_device(A))
            # a Delta computed in float32 is right to float32's rounding, about 1e-7 sigma_1(A)
            tol = 1e-5 if str(getattr(delta, "dtype", "")) in ("torch.float32", "float32") else 1e-9
            delta = tensor_answer(delta, A.shape, "the perturbation Delta (of the shape of A)", device=A.device)
            singular = torch.linalg.svdvals(A)
            # the threshold is at A's scale: a Delta from another SVD (another device) leaves rounding of order
            # eps sigma_1(A), more than the default threshold, relative to the largest singular value of A + Delta
            new_rank = linalg.rank(A + delta, tol=tol * float(singular[0]))
            expect(new_rank < rank, "A + Delta should have a lower rank than A", expected=f"rank < {rank}",
                   got=f"rank {new_rank}", hint="remove one singular triple of A")
            sigma = float(singular[rank - 1])
            norm = float(torch.linalg.matrix_norm(delta, ord=2))
            expect(norm <= sigma * (1 + tol), "Delta is larger than needed",
                   expected="||Delta||_2 <= sigma_min(A), the smallest nonzero singular value",
                   got=f"||Delta||_2 = {norm / sigma:.4g} sigma_min(A)",
                   hint="remove the smallest nonzero singular triple, -sigma_r u_r v_r^T (Eckart-Young)")

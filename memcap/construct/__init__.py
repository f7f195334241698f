"""Proofs as programs: each module builds the weights a paper's proof says exist.

``mahdavi``         Mahdavi et al. (2024): Lemmas 3-4, Claims 1-2, Proposition 1, Theorem 1, Remarks 1-2.
``mahdavi_limits``  Mahdavi et al. (2024): upper bounds and comparisons, Propositions 2-5.
``dana``            Dana et al. (2024): sequence encoders, Lemmas 2-3, Theorems 1-2, Corollary 1.
``dana_features``   Dana et al.'s Theorem 1 as proved in the book: feature counts, the one-row-per-head
                    witness, the construction with the skip shift, certified checks.
"""

"""memcap's two version numbers, defined once.

``__version__`` is the release of the library (read by ``pyproject.toml`` and recorded with every cached
result). ``ENGINE_VERSION`` says which numerics the training engine produces: every cached result records
it, and a cached result made by another engine version is never used (see :mod:`memcap.experiments.sweep`).

Bump ``ENGINE_VERSION`` whenever a change can alter what a training or capacity job returns: the
trainer, the models' initialisation or forward pass, the data, a default of ``MHASpec``, ``AoTSpec`` or
``TrainConfig``. ``tests/test_engine_version.py`` holds the numbers of a small reference run made with
this version and fails, asking for the bump, when the engine's numbers change.
"""

__version__ = "0.2.0"

ENGINE_VERSION = 6
"""Numerics of the training engine; part of every cache entry's manifest.

2: the AoT forward for S = 2 in closed form, the loss once per sequence when a batch covers all N^2,
and a written-out cross-entropy (same mathematics as 1, other rounding).
3: on a CPU, AoTs of one shape group cut into stacks by a cost model (``memcap.train.partition``) instead
of padded into one: each model's mathematics as in 2, float32 rounding may differ.
4: softmax and cross-entropy with hand-written backward passes on short rows (under 16 entries, under
32 classes), torch's kernels on longer ones (same mathematics as 3, other rounding); Adam in place when
every model of a stack is active (the same bits).
5: for d_v = 1 the softmax and the weighted sum of values in one function with a hand-written backward;
the closed form's sums over heads as (d x H)(H x N) products; o W_D + b_D in one product (same mathematics
as 4, other float32 rounding; the float64 reference run did not move at 1e-7).
6: for d_v = 1 on rows under 16 tokens, the scores in the layout (m, n, H, B), tokens on an outer axis; in
the two-token closed form, hand-written backward passes for the mixture of heads and for the products
with few columns; Adam's square root through NumPy on a CPU (correctly rounded; torch's was not always);
gradients taken at each weight's view of the stack's row (same mathematics as 5, other float32 rounding;
the float64 reference did not move at 1e-7)."""

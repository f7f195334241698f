"""The stacked training engine: many small attention models trained as one tensor program.

Both papers train thousands of tiny models one per process (Mahdavi et al., Section 5.2 and their
Appendix H; Dana et al., Section 4.2 and Appendix B). Here k independent models live in one set of
tensors whose first axis is the model axis: one forward pass, one backward pass and one Adam step update
all of them. Models never interact: every parameter, batch index, learning rate, Adam moment and
early-stop flag is per model, so training k models stacked gives the same numbers as training them one
by one (``tests/test_train.py`` checks it).

Models (the ``*Spec`` dataclasses say which model and which training set):

* :class:`MHASpec`: Mahdavi et al.'s one-layer multi-head attention, Eqs. (1)-(6), read out at the
  query. With ``embedding=True`` it is their experimental model (Section 5.2 and their published code):
  a trainable linear embedding of the raw U(0,1)^d tokens plus sinusoidal positions (query at position
  0, context tokens at 1..n), scores divided by sqrt(d), biases on embedding and readout, d_v = 1,
  no skip connection. With ``embedding=False`` it is exactly :func:`memcap.models.mha_forward`.
* :class:`AoTSpec`: Dana et al.'s attention-only transformer, Eqs. (1)-(2), and with ``mlp_width`` = w > 0
  their "MLP-based Transformer" of Section 4.2.1, W_U (W_2 GELU(W_1 .) + I_d)(x_S + sum_h W_O^h W_V^h A^h).

Training (:class:`TrainConfig`): Adam, linear warm-up then cosine decay (Mahdavi et al.'s recipe) or a
constant rate (Dana et al.'s), mini-batches drawn with replacement from each model's own training set,
full-training-set evaluation every ``eval_every`` steps, and per-model early stop at 100 % training
accuracy (a stopped model's parameters and Adam state are frozen exactly). Models that differ in H, d_h,
n, T (and for the AoT d and the MLP width w) share one stack: weights are zero-padded to the largest
model (a zero head, zero d_h column or zero MLP unit adds nothing and gets zero gradient, so it stays
zero), padded context tokens get attention exactly 0, padded examples are masked. Models that
differ in what cannot be padded (see ``shape_key``) go to separate stacks, and so do models whose
padding would waste much work (big MHA models of different H, AoTs with and without an MLP, and on a
CPU AoTs whose padding costs more than another stack: see ``memcap.train.loop.split_group``).

The engine is a small package, one concern per module, each readable top to bottom:

==============================  =============================================================================
module                          what it holds
==============================  =============================================================================
``memcap.train.specs``          :class:`MHASpec`, :class:`AoTSpec`: which model, which training set
``memcap.train.config``         :class:`TrainConfig`: how a stack is trained
``memcap.train.schedule``       :func:`lr_factor`: the learning-rate schedules
``memcap.train.forward``        the stacked forwards (tested against :mod:`memcap.models`, the reference)
``memcap.train.prepare``        initial weights and training sets, zero-padded to one shape
``memcap.train.stack``          one stack: weights as rows of one tensor, data, loss, evaluation
``memcap.train.adam``           Adam on the rows of a stack, per-model rates and freezing
``memcap.train.memory``         the C heap keeps freed activations; what counts as out of device memory
``memcap.train.loop``           :func:`train_models`: stacks in, :class:`TrainResult` out
``memcap.train.checkpoint``     a job's progress kept on disk, so a stopped job goes on with the same numbers
``memcap.train.compiled``       ``torch.compile`` for the step of long jobs on a CPU ('auto', 'always', 'never')
``memcap.train.graphs``         the step recorded once as a CUDA graph and replayed (``MEMCAP_CUDA_GRAPHS``)
``memcap.train.partition``      AoTs cut into stacks on a CPU where padding costs more than a stack
``memcap.train.capacity``       :func:`capacity_search`: the largest memorized training set
``memcap.train.inspection``     :func:`trained_attention`: attention of a trained model
``memcap.train.authors``        the papers' own training recipes, for ``python -m memcap bench`` only
==============================  =============================================================================

Everything a user needs is importable from ``memcap.train`` itself (the names of ``__all__``, documented
there); each keeps the name of the module that defines it (``memcap.train.specs.MHASpec``, ...).
"""
from __future__ import annotations

from memcap.train import schedule, specs
from memcap.train.capacity import CapacityResult, capacity_search
from memcap.train.checkpoint import Checkpoint, checkpointing
from memcap.train.config import MAX_COUNT, TrainConfig
from memcap.train.forward import aot_forward_stacked, mha_forward_stacked
from memcap.train.inspection import trained_attention
from memcap.train.loop import TrainResult, group_by_shape, train_models
from memcap.train.schedule import lr_factor
from memcap.train.specs import AoTSpec, MHASpec, spec_from_dict

Spec = specs.Spec
"""Any model spec: an :class:`MHASpec` or an :class:`AoTSpec` (:func:`train_models` takes a sequence of them)."""

SCHEDULES = schedule.SCHEDULES
"""The learning-rate schedules of :class:`TrainConfig`: Mahdavi et al.'s 'warmup_cosine', Dana et al.'s
'constant' (see :func:`lr_factor`)."""

__all__ = [
    "MHASpec", "AoTSpec", "Spec", "spec_from_dict", "SCHEDULES", "MAX_COUNT", "TrainConfig", "lr_factor",
    "mha_forward_stacked", "aot_forward_stacked", "TrainResult", "group_by_shape", "train_models",
    "CapacityResult", "capacity_search", "trained_attention", "Checkpoint", "checkpointing",
]

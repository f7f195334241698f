"""Looking inside trained models: attention weights on the training set (Mahdavi et al., Appendix H)."""
from __future__ import annotations

import numpy as np
import torch

from memcap._checks import real_tensor
from memcap.data import sinusoidal_positions
from memcap.device import pick_device
from memcap.train.forward import mha_outputs
from memcap.train.prepare import dataset, init_one
from memcap.train.specs import MHASpec


def trained_attention(spec: MHASpec, params: dict[str, np.ndarray], *, device: str | None = None) -> np.ndarray:
    """Attention weights theta (T, H, n) of a trained MHA model on its whole training set (Eq. (2)).

    ``params``: one model's weights, e.g. ``train_models(..., keep_params=True).params[i]`` (arrays; tensors
    must be on ``device``). Computed on ``device`` (None: :func:`memcap.device.pick_device`). Used for the
    softmax-saturation study (Mahdavi et al., Appendix H).
    """
    if not isinstance(spec, MHASpec):
        raise TypeError(f"spec must be an MHASpec, got {type(spec).__name__}")
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of arrays, got {type(params).__name__}")
    dev = pick_device(device)
    expected = init_one(spec)
    for name, t in expected.items():
        if name not in params or tuple(np.shape(params[name])) != tuple(t.shape):
            got = None if name not in params else tuple(np.shape(params[name]))
            raise ValueError(f"params[{name!r}] must have shape {tuple(t.shape)} for this spec, got {got}")
    stacked = {n: real_tensor(f"params[{n!r}]", params[n], dtype=torch.float64, device=dev)[None] for n in expected}
    (contexts, queries), _ = dataset(spec)
    ctx = contexts.to(dev)[None]                                              # (1, n, d) or (1, T, n, d)
    positions = sinusoidal_positions(spec.context_size + 1, spec.dim, dtype=torch.float64, device=dev) \
        if spec.embedding else None
    with torch.no_grad():
        _, theta = mha_outputs(stacked, ctx, queries.to(dev)[None], positions)
    return theta[0].cpu().numpy()

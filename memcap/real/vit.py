"""A small vision transformer (ViT) for the assumption tests of Mahdavi et al.'s Table 1 and Figure 1.

The architecture of ViT (Dosovitskiy et al., 2021) at a size a laptop trains in seconds: the image is cut
into ``patch x patch`` squares, each flattened and mapped linearly to :math:`\\mathbb{R}^d`; a learned
``[CLS]`` token is put in front; learned position vectors are added; then pre-LayerNorm blocks
(:class:`memcap.real.transformer.Block`). The class is read from the ``[CLS]`` token of the last layer.

In the language of Mahdavi et al., for image :math:`t` the **context** :math:`E^{(t)}` is the whole
``(n, d)`` token matrix of a layer (n = patches + 1) and the **query** :math:`e^{(t)}` its ``[CLS]``
row (row 0). :meth:`TinyViT.hidden_states` returns these matrices after the embedding (layer 0) and after
each block, like ``hidden_states`` of common ViT implementations.

Images are tensors, NumPy arrays or nested lists, converted once to the model's device and dtype;
non-finite, half-precision and empty images are refused naming ``images`` (labels: integer class ids,
``labels``). ``generator=None`` means a fresh generator seeded with 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from memcap import _resolve
from memcap._checks import (
    check_shape,
    float_input,
    id_tensor,
    module_input,
    positive_int,
)
from memcap.real.transformer import Block, _check_config, _layer_count, _train, init_normal_

__all__ = ["ViTConfig", "patchify", "TinyViT", "accuracy", "train_classifier"]


@dataclass(frozen=True)
class ViTConfig:
    """Sizes of a :class:`TinyViT`. ``image_size``: side of the square input after resizing (the digits
    are 8 x 8; a larger value upsamples them bilinearly); ``patch`` must divide it."""

    image_size: int = 8
    patch: int = 2
    channels: int = 1
    dim: int = 64
    heads: int = 4
    depth: int = 2
    mlp_ratio: int = 4
    classes: int = 10
    init_std: float = 0.02

    def __post_init__(self) -> None:
        sizes = ("image_size", "patch", "channels", "dim", "heads", "depth", "mlp_ratio", "classes")
        for name in sizes:
            positive_int(name, getattr(self, name))
        if self.image_size % self.patch:
            raise ValueError(f"patch must divide image_size, got patch = {self.patch}, "
                             f"image_size = {self.image_size}")
        # patch embedding, [CLS], positions, final LayerNorm and head: rows of dim numbers
        _check_config(self, sizes, embedded=self.patch_dim + 1 + 1 + self.tokens + 2 + self.classes)

    @property
    def patches(self) -> int:
        """Number of patches per image."""
        return (self.image_size // self.patch) ** 2

    @property
    def tokens(self) -> int:
        """Context size n: the patches plus the ``[CLS]`` token."""
        return self.patches + 1

    @property
    def patch_dim(self) -> int:
        """Pixels per patch, the input dimension of the patch embedding."""
        return self.channels * self.patch ** 2


def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """Cut ``images: (N, C, S, S)`` into non-overlapping squares: ``(N, (S/patch)^2, C * patch^2)``,
    patches in row-major order, each flattened channel by channel."""
    patch = positive_int("patch", patch)
    images = check_shape("images", float_input("images", images), (None, None, None, None), "(N, C, S, S)")
    n, c, h, w = images.shape
    if h != w or h % patch:
        raise ValueError(f"images must be square with a side divisible by patch = {patch}, got {h} x {w}")
    x = images.reshape(n, c, h // patch, patch, w // patch, patch)
    return x.permute(0, 2, 4, 1, 3, 5).reshape(n, (h // patch) ** 2, c * patch * patch)


class TinyViT(nn.Module):
    """A ViT classifier built from :class:`ViTConfig`, initialised from ``generator`` (None: a fresh one
    seeded with 0; weights, ``[CLS]`` and positions ~ N(0, init_std^2), as in ViT). Built on the CPU in
    float32; move it with ``.to(device)``."""

    def __init__(self, config: ViTConfig, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if not isinstance(config, ViTConfig):
            raise TypeError(f"config must be a ViTConfig, got {type(config).__name__}")
        self.config = config
        d = config.dim
        self.patch_embed = nn.Linear(config.patch_dim, d)
        self.cls = nn.Parameter(torch.zeros(1, 1, d, device="cpu"))   # built on the CPU: move it with .to(device)
        self.positions = nn.Parameter(torch.zeros(1, config.tokens, d, device="cpu"))
        self.blocks = nn.ModuleList(Block(d, config.heads, mlp_ratio=config.mlp_ratio) for _ in range(config.depth))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, config.classes)
        init_normal_(self, generator, config.init_std)

    def _prepare(self, images: torch.Tensor) -> torch.Tensor:
        """``(N, S0, S0)`` or ``(N, C, S0, S0)`` images -> ``(N, C, S, S)`` at the configured size."""
        images = module_input("images", images, self.cls)
        if images.dim() == 3:
            images = images.unsqueeze(1)
        check_shape("images", images, (None, self.config.channels, None, None), "(N, C, S, S)")
        if images.shape[-1] != images.shape[-2]:
            raise ValueError(f"images must be square, (N, S0, S0) or (N, C, S0, S0), got "
                             f"{images.shape[-2]} x {images.shape[-1]}: only a square image is resized to "
                             f"image_size = {self.config.image_size}")
        size = self.config.image_size
        if images.shape[-1] != size or images.shape[-2] != size:
            images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
        return images

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """Layer 0, the input of the first block: ``(N, n, d)`` with row 0 the ``[CLS]`` token."""
        x = self.patch_embed(patchify(self._prepare(images), self.config.patch))  # (N, patches, d)
        cls = self.cls.expand(x.shape[0], -1, -1)
        return torch.cat([cls, x], dim=1) + self.positions

    def hidden_states(self, images: torch.Tensor, layers: int | None = None) -> list[torch.Tensor]:
        """Token matrices ``(N, n, d)`` after the embedding and after each of the first ``layers`` blocks
        (all blocks when ``None``): a list of ``layers + 1`` tensors."""
        layers = _layer_count(layers, self.config.depth, "depth")
        states = [self.embed(images)]
        for block in self.blocks[:layers]:
            states.append(block(states[-1]))
        return states

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits ``(N, classes)`` from the ``[CLS]`` token of the last layer."""
        x = self.hidden_states(images)[-1]
        return self.head(self.norm(x[:, 0]))


def _examples(model: object, inputs: object, labels: object) -> tuple[torch.Tensor, torch.Tensor]:
    """``inputs`` ``(N, ...)`` on the model's device and in its dtype, and ``labels`` ``(N,)`` int64 class ids."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    inputs = module_input("inputs", inputs, next(model.parameters()))
    if inputs.dim() == 0 or 0 in inputs.shape:
        raise ValueError(f"inputs must be a non-empty batch (N, ...), got shape {tuple(inputs.shape)}")
    labels = check_shape("labels", id_tensor("labels", labels, device=inputs.device), (None,), "(N,)")
    if len(inputs) != len(labels):
        raise ValueError(f"inputs and labels must have the same length, got {len(inputs)} and {len(labels)}")
    was_training = model.training
    model.eval()
    with torch.no_grad():
        classes = model(inputs[:1]).shape[-1]   # the width of the logits: C classes, ids 0..C-1
    model.train(was_training)
    if int(labels.min()) < 0 or int(labels.max()) >= classes:
        raise ValueError(f"labels must be class ids in [0, C) = [0, {classes}) (the model's {classes} logits), "
                         f"got ids from {int(labels.min())} to {int(labels.max())}")
    return inputs, labels


def accuracy(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, *, batch_size: int = 512) -> float:
    """Fraction of ``inputs`` ``(N, ...)`` whose arg-max logit is the label ``(N,)`` (model in eval mode, no
    gradients)."""
    inputs, labels = _examples(model, inputs, labels)
    batch_size = positive_int("batch_size", batch_size)
    model.eval()
    with torch.no_grad():
        hits = sum(int((model(inputs[i:i + batch_size]).argmax(-1) == labels[i:i + batch_size]).sum())
                   for i in range(0, len(labels), batch_size))
    return hits / len(labels)


def train_classifier(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, *, steps: int,
                     batch_size: int, lr: float, generator: torch.Generator | None = None,
                     weight_decay: float = 0.05) -> list[float]:
    """Train ``model`` with AdamW on cross-entropy: random mini-batches of ``inputs`` ``(N, ...)`` and
    ``labels`` ``(N,)`` drawn from ``generator`` (None: a fresh one seeded with 0), the learning rate
    warmed up over the first 5 % of ``steps`` then decayed to 0 by a cosine. Returns the loss of every
    step."""
    batch_size = positive_int("batch_size", batch_size)
    inputs, labels = _examples(model, inputs, labels)

    def batch_loss(generator: torch.Generator) -> torch.Tensor:
        idx = _resolve.randint(len(labels), (batch_size,), generator, labels.device)
        return F.cross_entropy(model(inputs[idx]), labels[idx])

    return _train(model, batch_loss, steps=steps, lr=lr, weight_decay=weight_decay, generator=generator)

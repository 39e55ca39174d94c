"""Copies of a cell's tensors that keep what the user's program gives the path.

A tensor's own strides, and a view's being a view of its base. Within the cell's process (`copied`), and across to another process that compiles or loads
a compiled program (`sent` on this side, `received` on that one). An AOTInductor package's runner, which guards on no
base, is handed plain copies with their strides (`with_its_strides`).

Why both matter: `.clone()`, `.cpu()` and `.to(device)` make a view with gaps between its rows (a slice of a wider
buffer) contiguous, and what was compiled for the view's strides would be given another layout than the user's. And
Dynamo guards on a view's base (its size, its strides): a copy that is no view fails those guards, so a compiled
program recompiles, or a precompiled one refuses its input, where the user's program, calling it on the views its own
code makes, does neither.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch


def with_its_strides(tensor: torch.Tensor, device: Any = "cpu") -> torch.Tensor:
    """A copy on `device` with the tensor's own strides, its storage its own (no view): what an AOTInductor package's
    runner is handed, which guards on no base."""
    return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=device).copy_(tensor.detach())


def copied(tensor: torch.Tensor, device: Any = "cpu") -> torch.Tensor:
    """A copy on `device` with the tensor's own strides; a view, as the same view of a copy of its base."""
    base = _viewed_base(tensor)
    if base is not None:
        return with_its_strides(base, device).as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())
    return with_its_strides(tensor, device)


def _viewed_base(tensor: torch.Tensor) -> torch.Tensor | None:
    """The base a view can be made again from, by as_strided on a copy of it: one of the view's dtype whose storage
    starts where the base does (a view of a dense tensor: a slice, a transpose). None for any other tensor."""
    base = tensor._base
    if base is None or base.dtype != tensor.dtype or base.storage_offset() != 0 or not _dense(base):
        return None
    return base


def _dense(tensor: torch.Tensor) -> bool:
    """Whether its elements fill its storage from the start without gaps or overlaps, whatever their order."""
    order = sorted((stride, size) for size, stride in zip(tensor.shape, tensor.stride()) if size != 1)
    expected = 1
    for stride, size in order:
        if stride != expected:
            return False
        expected *= size
    return True


@dataclasses.dataclass(frozen=True)
class SentView:
    """A view as it crosses to another process: its base (on the CPU) and where in it the view lies."""

    base: torch.Tensor
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int


def sent(value: Any) -> Any:
    """What torch.save writes for another process: a tensor with its strides on the CPU, a view as a SentView (saved,
    a view becomes a tensor of its own, and the other process would get no view)."""
    if not isinstance(value, torch.Tensor):
        return value
    base = _viewed_base(value)
    if base is not None:
        return SentView(with_its_strides(base), tuple(value.shape), tuple(value.stride()), value.storage_offset())
    return with_its_strides(value)


def received(value: Any, device: Any) -> Any:
    """What `sent` wrote, on `device`: a view again a view of its base."""
    if isinstance(value, SentView):
        return with_its_strides(value.base, device).as_strided(value.shape, value.stride, value.offset)
    return with_its_strides(value, device) if isinstance(value, torch.Tensor) else value

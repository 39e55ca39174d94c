"""Tensors handed to another process (a package server, the C++ runner, a new compile process) with their own layout."""

from __future__ import annotations

from typing import Any

import torch


def with_its_strides(tensor: torch.Tensor, device: Any = "cpu") -> torch.Tensor:
    """A copy on `device` with the tensor's own strides. `.cpu()` and `.to(device)` make a view with gaps between its
    rows (a slice of a wider buffer) contiguous, and what was compiled for the view's strides would then be given
    another layout than the user's; the processes that receive it keep the strides too."""
    copy = torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=device)
    return copy.copy_(tensor.detach())

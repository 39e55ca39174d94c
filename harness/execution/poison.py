"""The allocators a launcher is given (`k.empty_like`, `k.empty`): every output filled with a poison first.

NaN for floats, the largest value for integers: an element the kernel does not write cannot match the reference. Plain
PyTorch: a cell's reproducer prints this file as it is.
"""

import math
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true


def _poison_value(dtype: torch.dtype) -> Any:
    # NaN for floats, the largest value for integers: an element the kernel does not write cannot match.
    if dtype.is_floating_point or dtype.is_complex:
        return math.nan
    return True if dtype == torch.bool else torch.iinfo(dtype).max


# Allocated already filled (full/full_like), never filled in place: an in-place fill of a fresh output
# inside an autograd.Function changes what torch.compile does with its gradients, and users do not write it.
def empty_like(tensor: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    if _unfoldable_fill(tensor, kwargs):
        _unpoisoned.add("an output whose layout its sizes leave undecided (a transposed view's with an unbacked batch)")
        return torch.empty_like(tensor, **kwargs)
    if _unfillable(kwargs.get("dtype") or tensor.dtype):
        return torch.empty_like(tensor, **kwargs)
    return torch.full_like(tensor, _poison_value(kwargs.get("dtype") or tensor.dtype), **kwargs)


def _unfillable(dtype: torch.dtype) -> bool:
    """Whether a filled tensor of this dtype fails to compile where the user's torch.empty compiles: Inductor writes a
    float8 fill as a Triton constant of that type, which Triton cannot make (torch 2.11, Triton 3.6: no get_fp8e4nv)."""
    if dtype.is_floating_point and dtype.itemsize == 1:
        if not torch.compiler.is_compiling():  # said from eager calls only: Dynamo would guard on the harness's set
            _unpoisoned.add(f"a {str(dtype).removeprefix('torch.')} output (Triton has no float8 constant)")
        return True
    return False


# What this process's allocations left unpoisoned since the last take_unpoisoned(), said in the cell's result.
_unpoisoned: set[str] = set()


def _unfoldable_fill(tensor: torch.Tensor, kwargs: dict[str, Any]) -> bool:
    """Whether a filled tensor of this layout fails to compile where the user's torch.empty_like compiles.
    Inductor's constant folding (constant_fold_uniform_value) asks whether a filled tensor is contiguous; where
    the sizes leave that undecided (a transposed layout with an unbacked batch: contiguous only if the batch is 0
    or 1) the question guards on the unbacked size and the whole compile fails (torch 2.11 to 2.13): a failure of
    the poison, not of the case. Asked without guarding (statically_known_true, which Dynamo traces), so the
    launcher compiles as it would with the user's allocation: eager tensors and every layout the sizes decide keep
    their poison."""
    if kwargs.get("memory_format", torch.preserve_format) is not torch.preserve_format:
        return False
    return _contiguity_undecided(tuple(tensor.shape), tuple(tensor.stride()))


def _contiguity_undecided(shape: tuple[Any, ...], strides: tuple[Any, ...]) -> bool:
    """Whether is_contiguous() of this layout depends on sizes not known yet. Contiguous: no elements, or each dim
    not of size 1 has the stride of a dense row-major layout. Not contiguous is decided only where a dim is known
    not to be of size 1 with a stride known wrong, and some size known not 0 (a (u0, 2) layout of strides (1, 1),
    what a transposed (1, 2) gives under an unbacked batch, is contiguous only for u0 of 0 or 1)."""
    expected: Any = 1  # the stride a dense row-major layout has at this dim
    for size, stride in reversed(list(zip(shape, strides))):
        if statically_known_true(size == 1):
            continue  # a dim of size 1 may have any stride
        if statically_known_true(stride == expected):
            expected = expected * size
            continue
        decided = statically_known_true(size != 1) and statically_known_true(stride != expected)
        return not decided or not all(statically_known_true(other != 0) for other in shape)
    return False


def take_unpoisoned() -> list[str]:
    """The outputs allocated without poison since the last call: an element the kernel does not write there
    goes unnoticed."""
    taken = sorted(_unpoisoned)
    _unpoisoned.clear()
    return taken


def empty(*size: Any, dtype: torch.dtype | None = None, **kwargs: Any) -> torch.Tensor:
    """As torch.empty: k.empty(n, m), k.empty((n, m)) or k.empty(torch.Size(...))."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
    dtype = dtype or torch.get_default_dtype()
    if _unfillable(dtype):
        return torch.empty(shape, dtype=dtype, **kwargs)
    return torch.full(shape, _poison_value(dtype), dtype=dtype, **kwargs)

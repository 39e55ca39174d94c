"""A kernel with an optional bias: None in some examples, a tensor in others."""

from typing import Optional

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def scale_bias_kernel(x_ptr, bias_ptr, out_ptr, n_cols, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(x_ptr + row * n_cols + cols, mask=mask) * 2.0
    if HAS_BIAS:
        y += tl.load(bias_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


def launch(k, x: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    out = k.empty_like(x)
    rows, cols = x.shape
    # Without a bias the kernel never reads its pointer: x stands in for it, as users write it.
    k.scale_bias_kernel[(rows,)](x, x if bias is None else bias, out, cols, HAS_BIAS=bias is not None,
                                 BLOCK=triton.next_power_of_2(cols))
    return out


def reference(x, bias):
    return x * 2 if bias is None else x * 2 + bias


def backward(k, grad: torch.Tensor, x: torch.Tensor, bias: Optional[torch.Tensor]) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    return grad * 2, None if bias is None else grad.sum(dim=0)


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    x = torch.randn((rows, cols), generator=generator)
    bias = torch.randn((cols,), generator=generator)
    return x.to(device=device, dtype=dtype), bias.to(device=device, dtype=dtype)


CASE = Case(
    name="optional_bias",
    kernels=(scale_bias_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(64, 300),
    example_shape=(4, 33),
    max_batch=1 << 14,
    unbatched=frozenset({"bias"}),
    backward=Backward(backward),
    tags=frozenset({"optional input"}),
    description="x * 2 + bias with bias: Optional[Tensor], None in some examples; a HAS_BIAS constexpr",
)

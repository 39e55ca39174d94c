"""One kernel writing two tensors: sin(x) and cos(x) from a single load."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def sincos_kernel(in_ptr, sin_ptr, cos_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    x32 = x.to(tl.float32)
    tl.store(sin_ptr + offsets, tl.sin(x32).to(x.dtype), mask=mask)
    tl.store(cos_ptr + offsets, tl.cos(x32).to(x.dtype), mask=mask)


def launch(k, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    sin, cos = k.empty_like(x), k.empty_like(x)
    n_elements = x.numel()
    k.sincos_kernel[(triton.cdiv(n_elements, 128),)](x, sin, cos, n_elements, BLOCK=128)
    return sin, cos


CASE = Case(
    name="two_outputs",
    kernels=(sincos_kernel,),
    launch=launch,
    reference=lambda x: (torch.sin(x), torch.cos(x)),
    make_inputs=inputs.randn(1, scale=3),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,
    tags=frozenset({"elementwise", "multi-output"}),
    description="two outputs from one kernel; no backward (training rows skipped)",
)

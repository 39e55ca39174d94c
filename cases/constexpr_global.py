"""A block size taken from a module-level `tl.constexpr`, not passed as an argument.

The kernel reads a global: tracing it must capture the global's value, which Dynamo and export see
only through the kernel's source.
"""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs

BLOCK = tl.constexpr(256)
SCALE = tl.constexpr(3.0)


@triton.jit
def scale_kernel(in_ptr, out_ptr, n_elements):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask) * SCALE, mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = out.numel()
    k.scale_kernel[(triton.cdiv(n_elements, BLOCK.value),)](x, out, n_elements)
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return grad * SCALE.value


CASE = Case(
    name="constexpr_global",
    kernels=(scale_kernel,),
    launch=launch,
    reference=lambda x: x * 3.0,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,
    backward=Backward(backward),
    tags=frozenset({"elementwise", "constexpr"}),
    description="BLOCK and SCALE are module-level tl.constexpr globals the kernel reads",
)

"""Bit reinterpretation in a kernel: |x| by clearing the sign bit of float32 through an int32 bitcast
(`x.to(tl.int32, bitcast=True)` and back)."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def abs_by_bits_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    bits = tl.load(x_ptr + offsets, mask=mask).to(tl.int32, bitcast=True)
    tl.store(out_ptr + offsets, (bits & 0x7FFFFFFF).to(tl.float32, bitcast=True), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.abs_by_bits_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


CASE = Case(
    name="bitcast",
    kernels=(abs_by_bits_kernel,),
    launch=launch,
    reference=torch.abs,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    dtypes=(torch.float32,),  # the bit pattern is float32's
    tags=frozenset({"bitcast"}),
    description="float32 |x| by an int32 bitcast that clears the sign bit",
)

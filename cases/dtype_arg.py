"""A kernel given its output's element type as a `tl.dtype` argument (a constexpr the launcher picks from the
input's torch dtype), and a tuple constexpr of scales."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs

_TL = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}


@triton.jit
def scaled_cast_kernel(x_ptr, out_ptr, n, OUT_DTYPE: tl.constexpr, SCALES: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x * SCALES[0] + SCALES[1]).to(OUT_DTYPE), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.scaled_cast_kernel[(triton.cdiv(n, 256),)](x, out, n, OUT_DTYPE=_TL[x.dtype], SCALES=(2.0, 1.0), BLOCK=256)
    return out


def reference(x):
    return (x.float() * 2.0 + 1.0).to(x.dtype)


CASE = Case(
    name="dtype_arg",
    kernels=(scaled_cast_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    tags=frozenset({"constexpr"}),
    description="a tl.dtype constexpr argument (the output's element type) and a tuple constexpr",
)

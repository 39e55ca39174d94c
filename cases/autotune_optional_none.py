"""An autotuned kernel given None for an optional tensor argument (no bias), and a tensor in other examples."""

from typing import Optional

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def axpb_kernel(x_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(x_ptr + offsets, mask=mask) * 3.0
    if b_ptr is not None:  # None is specialized: the branch is decided when the kernel compiles
        y += tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, y, mask=mask)


def launch(k, x: torch.Tensor, b: Optional[torch.Tensor]) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.axpb_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, b, out, n)  # None passed to the kernel as it is
    return out


def reference(x, b):
    return x * 3 if b is None else x * 3 + b


CASE = Case(
    name="autotune_optional_none",
    kernels=(axpb_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(2),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    tags=frozenset({"autotune", "optional"}),
    description="@triton.autotune kernel with an Optional tensor argument passed as None (the kernel tests `is not None`)",
)

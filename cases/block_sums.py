"""An output whose size comes from a dynamic dimension: one partial sum per BLOCK elements, `cdiv(n, BLOCK)` of
them. Its shape is an expression of the input's size, which the compilers must carry symbolically."""

import torch
import triton
import triton.language as tl

from harness import Case, Tolerance, inputs

BLOCK = 128


@triton.jit
def block_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(x, axis=0))


def launch(k, x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = k.empty(triton.cdiv(n, BLOCK), dtype=torch.float32, device=x.device)
    k.block_sum_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out


def reference(x):
    n = x.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    return torch.nn.functional.pad(x.float(), (0, blocks * BLOCK - n)).view(blocks, BLOCK).sum(dim=1)


CASE = Case(
    name="block_sums",
    kernels=(block_sum_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    dtypes=(torch.float32,),
    tolerances={torch.float32: Tolerance(atol=1e-4, rtol=1e-5)},
    min_batch=BLOCK + 1,  # at most BLOCK elements make one block, and export specialises a size of 1
    tags=frozenset({"reduction", "dynamic-output"}),
    description="an output of cdiv(n, BLOCK) partial sums: its size an expression of the input's",
)

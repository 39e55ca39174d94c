"""`@triton.heuristics` stacked on `@triton.autotune`, the order torch.compile supports (heuristics first).

The heuristic drops the bounds mask when the size is a multiple of every block size the autotuner may
pick; hypothesis draws 1024 and its neighbours often, so both branches run.
"""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.heuristics({"MASKLESS": lambda args: args["n_elements"] % 1024 == 0})
@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 64}, num_warps=2),
        triton.Config({"BLOCK": 256}, num_warps=4),
    ],
    key=["n_elements"],
)
@triton.jit
def gelu_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr, MASKLESS: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKLESS:
        x = tl.load(in_ptr + offsets).to(tl.float32)
    else:
        x = tl.load(in_ptr + offsets, mask=offsets < n_elements).to(tl.float32)
    y = 0.5 * x * (1 + tl.math.erf(x * 0.7071067811865476))
    if MASKLESS:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=offsets < n_elements)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)
    k.gelu_kernel[grid](x, out, n_elements)  # BLOCK from the autotuner, MASKLESS from the heuristic
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    x32 = x.float()
    cdf = 0.5 * (1 + torch.erf(x32 * 0.7071067811865476))
    pdf = torch.exp(-0.5 * x32 * x32) * 0.3989422804014327
    return (grad.float() * (cdf + x32 * pdf)).to(x.dtype)


CASE = Case(
    name="heuristics_autotune",
    kernels=(gelu_kernel,),
    launch=launch,
    reference=lambda x: torch.nn.functional.gelu(x.float()).to(x.dtype),
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(1024,),
    max_batch=1 << 22,
    backward=Backward(backward),
    tags=frozenset({"elementwise", "autotune", "heuristics"}),
    description="exact GELU; @triton.heuristics (MASKLESS) over @triton.autotune (BLOCK 64 or 256) keyed on n_elements",
)

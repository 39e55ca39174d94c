"""SiLU computed in float32 and cast back to the input dtype: the kernel of the export/AOTInductor blog."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def silu_kernel(in_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    x_f32 = x.to(tl.float32)
    out = (x_f32 * (1.0 / (1.0 + tl.exp(-x_f32)))).to(x.dtype)
    tl.store(out_ptr + offsets, out, mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    k.silu_kernel[grid](x, out, n_elements, BLOCK_SIZE=1024)
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    x32 = x.float()
    s = torch.sigmoid(x32)
    return (grad.float() * s * (1 + x32 * (1 - s))).to(x.dtype)


CASE = Case(
    name="silu",
    kernels=(silu_kernel,),
    launch=launch,
    reference=torch.nn.functional.silu,
    make_inputs=inputs.randn(1, scale=4),
    shapes=inputs.shapes(512, 128),
    example_shape=(8, 128),
    max_batch=1 << 15,  # --perf times (32768, 128)
    backward=Backward(backward),
    tags=frozenset({"elementwise", "blog"}),
    description="x * sigmoid(x) in float32, cast back; 2-D input flattened by the kernel",
)

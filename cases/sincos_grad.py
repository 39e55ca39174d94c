"""One kernel writing two outputs whose input requires grad: sin(x) and cos(x), the backward a kernel of its own
given both outputs' gradients, the input and both outputs (what the forward saved), as a library's Function passes them."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def sincos_kernel(x_ptr, sin_ptr, cos_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    x32 = x.to(tl.float32)
    tl.store(sin_ptr + offsets, tl.sin(x32).to(x.dtype), mask=mask)
    tl.store(cos_ptr + offsets, tl.cos(x32).to(x.dtype), mask=mask)


@triton.jit
def sincos_bwd_kernel(dsin_ptr, dcos_ptr, sin_ptr, cos_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    dsin = tl.load(dsin_ptr + offsets, mask=mask).to(tl.float32)
    dcos = tl.load(dcos_ptr + offsets, mask=mask).to(tl.float32)
    sin = tl.load(sin_ptr + offsets, mask=mask).to(tl.float32)
    cos = tl.load(cos_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(dx_ptr + offsets, (dsin * cos - dcos * sin).to(dx_ptr.dtype.element_ty), mask=mask)


def launch(k, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    sin, cos = k.empty_like(x), k.empty_like(x)
    n = x.numel()
    k.sincos_kernel[(triton.cdiv(n, 128),)](x, sin, cos, n, BLOCK=128)
    return sin, cos


def backward(k, grad_sin: torch.Tensor, grad_cos: torch.Tensor, x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    dx = k.empty_like(x)
    n = sin.numel()
    k.sincos_bwd_kernel[(triton.cdiv(n, 128),)](grad_sin.contiguous(), grad_cos.contiguous(), sin, cos, dx, n, BLOCK=128)
    return dx


CASE = Case(
    name="sincos_grad",
    kernels=(sincos_kernel,),
    launch=launch,
    returns=("sin", "cos"),
    reference=lambda x: (torch.sin(x), torch.cos(x)),
    make_inputs=inputs.randn(1, scale=3),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    backward=Backward(backward, kernels=(sincos_bwd_kernel,), takes=("grad_sin", "grad_cos", "x", "sin", "cos")),
    tags=frozenset({"elementwise", "multi-output", "training"}),
    description="two outputs from one kernel, each with its gradient; the backward kernel takes both outputs",
)

"""Layer normalization over the last dimension with a weight and a bias: a forward kernel and a backward
kernel (the input's gradient), the shape of a real training kernel."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, Tolerance, inputs

EPS = 1e-5


@triton.jit
def _normalized_row(x_ptr, row, cols, mask, n_cols, eps):
    """x's row minus its mean, and 1 / its standard deviation (a @triton.jit helper both kernels call)."""
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    xc = tl.where(mask, x - tl.sum(x, axis=0) / n_cols, 0.0)
    return xc, 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)


@triton.jit
def layernorm_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    xc, rstd = _normalized_row(x_ptr, row, cols, mask, n_cols, eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, dx_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    xc, rstd = _normalized_row(x_ptr, row, cols, mask, n_cols, eps)
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    wdy = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32) * dy
    xhat = xc * rstd
    c1 = tl.sum(xhat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    tl.store(dx_ptr + row * n_cols + cols, ((wdy - (xhat * c1 + c2)) * rstd).to(dx_ptr.dtype.element_ty), mask=mask)


def launch(k, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    rows, cols = x.shape
    k.layernorm_fwd_kernel[(rows,)](x, weight, bias, out, cols, EPS, BLOCK_N=triton.next_power_of_2(cols))
    return out


def backward(
    k, grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dx from its Triton kernel; dweight and dbias, sums over the rows, in PyTorch."""
    grad = grad.contiguous()
    dx = k.empty_like(x)
    rows, cols = x.shape
    k.layernorm_bwd_dx_kernel[(rows,)](grad, x, weight, dx, cols, EPS, BLOCK_N=triton.next_power_of_2(cols))
    x32 = x.float()
    xhat = (x32 - x32.mean(dim=1, keepdim=True)) * torch.rsqrt(x32.var(dim=1, unbiased=False, keepdim=True) + EPS)
    return dx, (grad.float() * xhat).sum(dim=0).to(weight.dtype), grad.float().sum(dim=0).to(bias.dtype)


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    x = torch.randn((rows, cols), generator=generator)
    weight = 1 + 0.1 * torch.randn((cols,), generator=generator)
    bias = 0.1 * torch.randn((cols,), generator=generator)
    return tuple(t.to(device=device, dtype=dtype) for t in (x, weight, bias))


def reference(x, weight, bias):
    return torch.nn.functional.layer_norm(x.float(), (x.shape[1],), weight.float(), bias.float(), EPS).to(x.dtype)


CASE = Case(
    name="layernorm",
    kernels=(layernorm_fwd_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(64, 1100),  # (rows, cols); one program per row
    example_shape=(4, 129),
    max_batch=1 << 14,
    unbatched=frozenset({"weight", "bias"}),
    backward=Backward(backward, kernels=(layernorm_bwd_dx_kernel,)),
    tolerances={torch.float32: Tolerance(atol=1e-4, rtol=1e-4)},
    tags=frozenset({"reduction", "training", "normalization"}),
    description="a row per program; weight and bias have no batch dimension; dx from a backward kernel",
)

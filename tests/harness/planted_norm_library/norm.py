"""RMSNorm as a library writes it: the forward returns (y, rstd), the backward takes rstd, and RmsNormFunction
saves rstd between them. sincos returns two outputs, each with a gradient. `bad_backward` returns one tensor as
two inputs' gradients (an aliasing mistake)."""

import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * N + cols, x * rstd * w, mask=mask)


@triton.jit
def rms_norm_bwd_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row)
    xhat = x * rstd
    g = dy * w
    dx = rstd * (g - xhat * tl.sum(g * xhat, axis=0) / N)
    tl.store(dx_ptr + row * N + cols, dx, mask=mask)


def rms_norm_fwd(x, weight, eps=1e-6):
    """The library's forward launcher: the output and the rstd its backward needs."""
    M, N = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
    rms_norm_fwd_kernel[(M,)](x, weight, y, rstd, N, eps, BLOCK=triton.next_power_of_2(N))
    return y, rstd


def rms_norm_bwd(dy, x, rstd, weight):
    """The library's backward launcher, given what the forward saved: dx by a kernel, dweight in PyTorch."""
    M, N = x.shape
    dx = torch.empty_like(x)
    rms_norm_bwd_kernel[(M,)](dy.contiguous(), x, weight, rstd, dx, N, BLOCK=triton.next_power_of_2(N))
    dw = (dy.float() * x.float() * rstd[:, None]).sum(0).to(weight.dtype)
    return dx, dw


class RmsNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        y, rstd = rms_norm_fwd(x, weight)
        ctx.save_for_backward(x, rstd, weight)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, rstd, weight = ctx.saved_tensors
        return rms_norm_bwd(dy, x, rstd, weight)


@triton.jit
def sincos_kernel(x_ptr, sin_ptr, cos_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(sin_ptr + offsets, tl.sin(x), mask=mask)
    tl.store(cos_ptr + offsets, tl.cos(x), mask=mask)


def sincos(x):
    """Two outputs from one kernel (float32 inputs)."""
    sin, cos = torch.empty_like(x), torch.empty_like(x)
    sincos_kernel[(triton.cdiv(x.numel(), 64),)](x, sin, cos, x.numel(), BLOCK=64)
    return sin, cos


def sincos_bwd(dsin, dcos, sin, cos):
    """d/dx of (sin x, cos x), from what the forward returned: dsin * cos - dcos * sin."""
    return dsin * cos - dcos * sin


class SinCosFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        sin, cos = sincos(x)
        ctx.save_for_backward(sin, cos)
        return sin, cos

    @staticmethod
    def backward(ctx, dsin, dcos):
        sin, cos = ctx.saved_tensors
        return sincos_bwd(dsin, dcos, sin, cos)


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def add(a, b):
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 64),)](a, b, out, a.numel(), BLOCK=64)
    return out


def add_bwd_aliased(grad, a, b):
    """The gradient of a + b for both inputs, as a library's Function may return it: one tensor, twice."""
    dgrad = torch.empty_like(grad)
    copy_kernel[(triton.cdiv(grad.numel(), 64),)](grad, dgrad, grad.numel(), BLOCK=64)
    return dgrad, dgrad


def add_bwd_into_input(grad, a, b):
    """The gradients written into the inputs' memory, which the forward no longer needs, as an in-place backward does."""
    copy_kernel[(triton.cdiv(grad.numel(), 64),)](grad, a, grad.numel(), BLOCK=64)
    copy_kernel[(triton.cdiv(grad.numel(), 64),)](grad, b, grad.numel(), BLOCK=64)
    return a.clone(), b.clone()

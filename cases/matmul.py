"""Batched matmul with `tl.dot`, autotuned over tile sizes with a `key`: the shape of real GEMM kernels."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, Tolerance, inputs


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, num_warps=2),
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    batch = tl.program_id(2)
    a_ptr += batch * M * K
    b_ptr += batch * K * N
    c_ptr += batch * M * N
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None] * K + (k0 + ks)[None, :], mask=(rows[:, None] < M) & ((k0 + ks)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + ks)[:, None] * N + cols[None, :], mask=((k0 + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def launch(k, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    batch, m, kk = a.shape
    n = b.shape[2]
    out = k.empty((batch, m, n), dtype=a.dtype, device=a.device)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]), batch)
    k.bmm_kernel[grid](a, b, out, m, n, kk)
    return out


def make_inputs(shape, dtype, device, generator):
    batch, m, kk, n = shape
    a = torch.randn((batch, m, kk), generator=generator).to(device=device, dtype=dtype)
    b = torch.randn((batch, kk, n), generator=generator).to(device=device, dtype=dtype)
    return a.contiguous(), b.contiguous()


def backward(k, grad: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return grad @ b.transpose(1, 2), a.transpose(1, 2) @ grad


def flops(a_shape, b_shape):
    batch, m, kk = a_shape
    return 2 * batch * m * kk * b_shape[2]


CASE = Case(
    name="matmul",
    kernels=(bmm_kernel,),
    launch=launch,
    reference=lambda a, b: torch.bmm(a.float(), b.float()).to(a.dtype),
    make_inputs=make_inputs,
    shapes=inputs.shapes(4, 130, 70, 130),  # (batch, M, K, N)
    example_shape=(2, 33, 32, 17),
    max_batch=1 << 10,
    backward=Backward(backward),
    flops=flops,
    # tl.dot multiplies float32 in TF32 on the GPU (a 10-bit mantissa), over K up to 70 products.
    tolerances={
        torch.float32: Tolerance(atol=5e-2, rtol=1e-2),
        torch.float16: Tolerance(atol=2e-2, rtol=1e-2),
        torch.bfloat16: Tolerance(atol=1e-1, rtol=2e-2),
    },
    tags=frozenset({"matmul", "autotune", "3d-grid"}),
    description="tl.dot over (M, N) tiles and a batch grid axis; three tile configs keyed on M, N, K",
)

"""Signature checked: "the flop count differs from the reference: N where the reference has N" (WRONG).

Cells: raw and raw_autograd on flop_counter, cases add, add_autotuned, matmul, sin. The harness
(harness/subsystems.py:programs FLOP_COUNTER) counts FlopCounterMode(display=False).get_total_flops() around one
call of the style's callable, and compares it with FlopCounterMode's count of the PyTorch reference, or,
where that is 0 (x + y, sin), the case's declared formula (add: numel).
Here: the raw add launcher and the autograd.Function through a plain function (count vs numel); as the
contrast, the same kernel as a triton_op with register_flop_formula (expected PASS); and the raw matmul
launcher (cases/matmul.py's kernel) vs FlopCounterMode's count of torch.bmm (2*B*M*K*N).
Verdict: WRONG (0 counted) for raw / Function = the style's own behaviour (FlopCounterMode counts only the
operators dispatched through it; a Triton launch is none); a PASS there = a harness artifact.
"""
import math

import torch
import triton
import triton.language as tl
from torch.utils.flop_counter import FlopCounterMode, register_flop_formula

DEVICE = torch.device("cuda")

@triton.jit
def add_kernel(in_ptr0, in_ptr1, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr0 + offsets, mask=mask)
    y = tl.load(in_ptr1 + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)

def add(x, y):
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=128)
    return out

class AddFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return add(x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad

def add_fn(x, y):
    return AddFn.apply(x, y)

@torch.library.triton_op("standalone::add", mutates_args=())
def add_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    torch.library.wrap_triton(add_kernel)[grid](x, y, out, n_elements, BLOCK_SIZE=128)
    return out

@register_flop_formula(torch.ops.standalone.add)
def add_flops(x_shape, y_shape, *args, out_shape=None, **kwargs):
    return math.prod(x_shape)  # as cases/add.py's numel

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

def bmm(a, b):
    batch, m, kk = a.shape
    n = b.shape[2]
    out = torch.empty((batch, m, n), dtype=a.dtype, device=a.device)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]), batch)
    bmm_kernel[grid](a, b, out, m, n, kk)
    return out

def flops(fn, *inputs):
    with FlopCounterMode(display=False) as counter:
        fn(*inputs)
    return counter.get_total_flops()

x, y = torch.randn(300, device=DEVICE), torch.randn(300, device=DEVICE)
a, b = torch.randn(2, 33, 32, device=DEVICE), torch.randn(2, 32, 17, device=DEVICE)
add_expected = flops(torch.add, x, y) or x.numel()  # torch counts no flops for add: the formula (numel) stands
bmm_expected = flops(torch.bmm, a, b)  # 2 * 2 * 33 * 32 * 17
for label, fn, inputs, expected in [("raw add launcher", add, (x, y), add_expected),
                                    ("add autograd.Function through a plain function", add_fn, (x, y), add_expected),
                                    ("add triton_op with register_flop_formula", torch.ops.standalone.add, (x, y), add_expected),
                                    ("raw matmul launcher", bmm, (a, b), bmm_expected)]:
    try:
        counted = flops(fn, *inputs)
        print(f"CHECK {label}, flop_counter: " + ("PASS" if counted == expected else
              f"WRONG the flop count differs from the reference: {counted} where the reference has {expected}"))
    except BaseException as e:
        print(f"CHECK {label}, flop_counter: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")

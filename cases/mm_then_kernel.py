"""A kernel fed by an extern op in the same graph: `x @ w` (a matmul Inductor leaves to cuBLAS or its own
template), then a row-wise kernel on the product."""

import torch
import triton
import triton.language as tl

from harness import Case


@triton.jit
def relu_rows_kernel(h_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = tl.load(h_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(h, 0.0), mask=mask)


def launch(k, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = x @ w
    out = k.empty_like(h)
    rows, cols = h.shape
    k.relu_rows_kernel[(rows,)](h, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out


def make_inputs(shape, dtype, device, generator):
    rows, inner = shape
    x = torch.randn((rows, inner), generator=generator) / inner**0.5
    w = torch.randn((inner, 48), generator=generator)
    return x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)


def shapes():
    from hypothesis import strategies as st

    return st.tuples(st.integers(1, 64), st.integers(1, 96))


CASE = Case(
    name="mm_then_kernel",
    kernels=(relu_rows_kernel,),
    launch=launch,
    reference=lambda x, w: torch.relu(x @ w),
    make_inputs=make_inputs,
    shapes=shapes(),
    example_shape=(4, 32),
    unbatched=frozenset({"w"}),
    tags=frozenset({"extern"}),
    description="a matmul (extern op) feeding a row-wise kernel in the same graph",
)

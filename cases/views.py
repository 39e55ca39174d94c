"""Inputs that are views: a slice with a non-zero storage offset and a row stride wider than its rows, as a model
hands a kernel a part of a larger buffer. The kernel reads with the strides it is given."""

import torch
import triton
import triton.language as tl

from harness import Case


@triton.jit
def strided_scale_kernel(x_ptr, out_ptr, n_cols, x_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * 2.0, mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = k.empty((rows, cols), dtype=x.dtype, device=x.device)
    k.strided_scale_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    buffer = torch.randn((rows + 1, cols + 3), generator=generator).to(device=device, dtype=dtype)
    return (buffer[1:, 2 : 2 + cols],)  # storage offset cols + 5, row stride cols + 3


def shapes():
    from hypothesis import strategies as st

    return st.tuples(st.integers(1, 64), st.integers(1, 300))


CASE = Case(
    name="views",
    kernels=(strided_scale_kernel,),
    launch=launch,
    reference=lambda x: x * 2,
    make_inputs=make_inputs,
    shapes=shapes(),
    example_shape=(4, 100),
    tags=frozenset({"views", "strides"}),
    description="a view input: a slice with a storage offset and a wider row stride",
)

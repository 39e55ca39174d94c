"""A kernel with a `while` loop whose bound is a runtime argument: how many of up to 8 halvings each element takes
to fall below a threshold."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs

MAX_STEPS = 8  # passed as a runtime int (Triton specializes only 1)


@triton.jit
def halvings_kernel(x_ptr, out_ptr, n, threshold, max_steps, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.abs(tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32))
    count = tl.zeros([BLOCK], dtype=tl.float32)
    steps = 0
    while steps < max_steps:  # scf.while: the bound is a runtime argument
        above = x >= threshold
        count += above.to(tl.float32)
        x = tl.where(above, x * 0.5, x)
        steps += 1
    tl.store(out_ptr + offsets, count.to(out_ptr.dtype.element_ty), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.halvings_kernel[(triton.cdiv(n, 128),)](x, out, n, 0.25, MAX_STEPS, BLOCK=128)
    return out


def reference(x):
    # An element is halved while it is at least 0.25, at most MAX_STEPS times, and halving is exact: it takes one step
    # for each k < MAX_STEPS with |x| >= 0.25 * 2**k (NaN none, inf all). Written as the loop (each step's `where` on
    # the last), the graph took Inductor's CPU backend 14 s to compile an example; this one compiles as any pointwise op.
    a = x.abs().float()
    return sum((a >= 0.25 * 2.0**k).float() for k in range(MAX_STEPS)).to(x.dtype)


CASE = Case(
    name="while_loop",
    kernels=(halvings_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(1, scale=4.0),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    tags=frozenset({"control-flow"}),
    description="a `while` loop in the kernel, counting halvings of each element below a threshold",
)

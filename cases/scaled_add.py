"""x + repeat * alpha * y with a runtime float `alpha` and an int `repeat` among the kernel's arguments.

Triton specialises an int argument equal to 1 (and a multiple of 16) into the compiled kernel, and
torch.compile specialises ints too: hypothesis draws `repeat` from 1, 2 and 3, so a wrapper that keeps
the first specialisation for the next value fails here.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

from harness import Backward, Case, inputs


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, alpha, repeat, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    acc = x.to(tl.float32)
    for _ in range(repeat):  # the int scalar is a loop bound
        acc += alpha * y
    tl.store(out_ptr + offsets, acc.to(x.dtype), mask=mask)


def launch(k, x: torch.Tensor, y: torch.Tensor, alpha: float, repeat: int) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = out.numel()
    k.scaled_add_kernel[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, alpha, repeat, BLOCK=256)
    return out


def reference(x, y, alpha, repeat):
    acc = x.float()
    for _ in range(repeat):
        acc = acc + alpha * y.float()
    return acc.to(x.dtype)


def backward(k, grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor, alpha: float, repeat: int) -> tuple[torch.Tensor, torch.Tensor]:
    return grad, grad * (alpha * repeat)


CASE = Case(
    name="scaled_add",
    kernels=(scaled_add_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(2),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,
    scalars={"alpha": st.floats(-2.0, 2.0, width=32), "repeat": st.sampled_from([1, 2, 3])},
    example_scalars={"alpha": 0.5, "repeat": 1},
    backward=Backward(backward),
    tags=frozenset({"elementwise", "scalar-args"}),
    description="a float and an int argument; the int (drawn as 1, 2 or 3) bounds a loop",
)

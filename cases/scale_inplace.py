"""x *= alpha in place: a kernel that mutates its input, declared in `mutates_args`."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs

ALPHA = 1.5


@triton.jit
def scale_kernel(x_ptr, alpha, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, (x.to(tl.float32) * alpha).to(x.dtype), mask=mask)


def launch(k, x: torch.Tensor, alpha: float) -> None:
    n_elements = x.numel()
    k.scale_kernel[(triton.cdiv(n_elements, 128),)](x, alpha, n_elements, BLOCK_SIZE=128)


def reference(x: torch.Tensor, alpha: float) -> None:
    x.mul_(alpha)


def make_inputs(shape, dtype, device, generator):
    return torch.randn(shape, generator=generator).to(device=device, dtype=dtype), ALPHA


CASE = Case(
    name="scale_inplace",
    kernels=(scale_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,  # --perf times 4M elements
    mutates=frozenset({"x"}),
    tags=frozenset({"mutation"}),
    description="writes its input in place and returns nothing; a float argument `alpha` that make_inputs fixes at 1.5",
)

"""torch.where with a bool mask tensor: a bool input the kernel loads as a pointer."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def where_kernel(mask_ptr, x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n_elements
    keep = tl.load(mask_ptr + offsets, mask=inside, other=0) != 0
    x = tl.load(x_ptr + offsets, mask=inside)
    y = tl.load(y_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, tl.where(keep, x, y), mask=inside)


def launch(k, mask: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = out.numel()
    k.where_kernel[(triton.cdiv(n, 256),)](mask, x, y, out, n, BLOCK=256)
    return out


def backward(k, grad: torch.Tensor, mask: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[None, torch.Tensor, torch.Tensor]:
    zero = torch.zeros_like(grad)
    return None, torch.where(mask, grad, zero), torch.where(mask, zero, grad)


def make_inputs(shape, dtype, device, generator):
    mask = torch.rand(shape, generator=generator) < 0.5
    x, y = (torch.randn(shape, generator=generator).to(dtype) for _ in range(2))
    return mask.to(device), x.to(device), y.to(device)


CASE = Case(
    name="mask_select",
    kernels=(where_kernel,),
    launch=launch,
    reference=torch.where,
    make_inputs=make_inputs,
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,
    backward=Backward(backward),
    tags=frozenset({"elementwise", "bool mask"}),
    description="torch.where(mask, x, y) with a bool mask tensor loaded by the kernel",
)

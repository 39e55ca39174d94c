"""x + y through tensor descriptors made inside the kernel (`tl.make_tensor_descriptor`), on Hopper and later GPUs.
A device-side descriptor needs global scratch memory, which Triton asks of the allocator the library sets with
`triton.set_allocator` (here, as libraries do, when the module is imported)."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs

from .tma_add import hopper_or_later, make_inputs

BLOCK = 128  # TMA moves at least 16 bytes a block


def _scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    return torch.empty(size, dtype=torch.int8, device="cuda")


triton.set_allocator(_scratch)


@triton.jit
def tma_device_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    offset = tl.program_id(0) * BLOCK
    out_desc.store([offset], x_desc.load([offset]) + y_desc.load([offset]))  # out-of-bounds parts are clipped


def launch(k, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = out.numel()
    k.tma_device_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    return out


CASE = Case(
    name="tma_device",
    kernels=(tma_device_add_kernel,),
    launch=launch,
    reference=lambda x, y: x + y,
    make_inputs=make_inputs,
    shapes=inputs.shapes(4096),
    example_shape=(304,),
    max_batch=1 << 22,
    requires=hopper_or_later,
    tags=frozenset({"elementwise", "tma", "hopper"}),
    description="1-D tensor descriptors made in the kernel (tl.make_tensor_descriptor), scratch from triton.set_allocator; Hopper (sm_90) and later only",
)

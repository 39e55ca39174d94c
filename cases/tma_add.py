"""x + y through tensor descriptors (TMA) on Hopper and later GPUs: the descriptors are made on the host
and passed to the kernel, which loads and stores whole blocks through them."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs

BLOCK = 128  # TMA moves at least 16 bytes a block


@triton.jit
def tma_add_kernel(x_desc, y_desc, out_desc, BLOCK: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    out_desc.store([offset], x_desc.load([offset]) + y_desc.load([offset]))  # out-of-bounds parts are clipped


def launch(k, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    from triton.tools.tensor_descriptor import TensorDescriptor

    out = k.empty_like(x)
    n_elements = out.numel()
    descs = [TensorDescriptor.from_tensor(t, block_shape=[BLOCK]) for t in (x, y, out)]
    k.tma_add_kernel[(triton.cdiv(n_elements, BLOCK),)](*descs, BLOCK=BLOCK)
    return out


def hopper_or_later(device: str) -> str | None:
    if device != "cuda":
        return "tensor descriptors need a GPU with TMA (compute capability 9.0 or later); this run has none"
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        return f"tensor descriptors need compute capability 9.0 or later (TMA); this GPU has {major}.{minor}"
    return None


def make_inputs(shape, dtype, device, generator):
    # TMA needs 16-byte aligned sizes: whole multiples of 8 elements for 2-byte dtypes.
    (n,) = shape
    n = max(8, n - n % 8)
    return tuple(torch.randn((n,), generator=generator).to(device=device, dtype=dtype) for _ in range(2))


CASE = Case(
    name="tma_add",
    kernels=(tma_add_kernel,),
    launch=launch,
    reference=lambda x, y: x + y,
    make_inputs=make_inputs,
    shapes=inputs.shapes(4096),
    example_shape=(304,),
    max_batch=1 << 22,
    requires=hopper_or_later,
    tags=frozenset({"elementwise", "tma", "hopper"}),
    description="1-D tensor descriptors made with TensorDescriptor.from_tensor; sizes cut to a multiple of 8 (TMA's 16-byte alignment); Hopper (sm_90) and later only",
)

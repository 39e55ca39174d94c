"""float32 to float8 (e4m3) in a kernel: each value rounded to the nearest fp8, its bits returned as uint8 (the
reference is torch's own cast, compared bit for bit). fp8 conversions need compute capability 8.9 or later."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def to_fp8_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask).to(tl.float8e4nv), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    n = x.numel()
    k.to_fp8_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out.view(torch.uint8)


def fp8_capable(device: str) -> str | None:
    if device != "cuda":
        return "the fp8 conversion is compiled for a GPU with compute capability 8.9 or later; this run has none"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) < (8, 9):
        return f"fp8 conversions need compute capability 8.9 or later; this GPU has {major}.{minor}"
    return None


CASE = Case(
    name="fp8_cast",
    kernels=(to_fp8_kernel,),
    launch=launch,
    reference=lambda x: x.to(torch.float8_e4m3fn).view(torch.uint8),
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    dtypes=(torch.float32,),
    requires=fp8_capable,
    tags=frozenset({"bitcast", "fp8"}),
    description="float32 to float8_e4m3fn in the kernel, its bits viewed as uint8 and compared with torch's cast",
)

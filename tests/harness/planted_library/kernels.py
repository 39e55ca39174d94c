"""The kernels, and the launch helpers that call them as module globals."""

import torch
import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def scale_kernel(in_ptr, out_ptr, factor, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask) * factor, mask=mask)


def _launch_scale(x, out, factor):
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)  # noqa: E731 - as the library writes it
    scale_kernel[grid](x, out, factor, n_elements, BLOCK=BLOCK)


def scale_forward(x: torch.Tensor, factor: float = 2.0) -> torch.Tensor:
    """The library's launcher: a helper launches the kernel, the output comes from torch."""
    x = x.contiguous()
    out = torch.empty_like(x)
    _launch_scale(x, out, factor)
    return out

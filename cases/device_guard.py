"""A launcher that runs its kernel under `with torch.cuda.device(x.device):` and reads the device it runs on, as
libraries' launchers do: its compute capability picks the block size, and Triton's active target the warps."""

import contextlib

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def triple_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3, mask=mask)


def _block(device: torch.device) -> int:
    """A wider block on Hopper and later, as a library tunes by capability; 128 without CUDA."""
    if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9:
        return 256
    return 128


def _warps(device: torch.device) -> int:
    """8 warps on Hopper and later by Triton's own view of the GPU (its active driver's target), 4 elsewhere."""
    if device.type != "cuda":  # Triton's interpreter has no active GPU driver to ask
        return 4
    target = triton.runtime.driver.active.get_current_target()
    return 8 if target.backend == "cuda" and int(target.arch) >= 90 else 4


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    block = _block(x.device)
    with torch.cuda.device(x.device) if x.device.type == "cuda" else contextlib.nullcontext():
        k.triple_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=_warps(x.device))
    return out


CASE = Case(
    name="device_guard",
    kernels=(triple_kernel,),
    launch=launch,
    reference=lambda x: x * 3,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    tags=frozenset({"device"}),
    description="a launcher under `with torch.cuda.device(x.device)` that reads the device's capability and Triton's active target",
)

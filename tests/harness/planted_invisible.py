"""Environment-sensitive idioms as kernel libraries write them, for the standing test of the harness's invisibility
(test_invisible): a launcher, a reference and a shipped op that ask, before they pick a code path, whether CUDA is
there, the device's capability and index, torch's CUDA and HIP versions, an lru_cache'd device probe, the environment
and whether they are being compiled; and one that asks Triton's active driver for its target.

Every answer only picks a block size or an unused scalar, never the result, so a cell's outcome depends on how the
path traces these questions, not on what they answer: each cell must have the outcome its program (the cell's
reproducer) has in a fresh interpreter. `asks_the_device` passes every path in a fresh process; `asks_triton_target`
fails the traced ones there (Dynamo skips Triton's driver), and must fail them the same way in the matrix.

Not part of the default chart: the matrix loads them only when named with `--cases`.
"""

import functools
import os

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def twice_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


@functools.lru_cache(maxsize=None)
def _on_nvidia() -> bool:
    """A device probe asked once and cached, as libraries cache theirs."""
    return torch.cuda.is_available() and torch.version.cuda is not None


def _block_for_this_device() -> int:
    """What a library asks before it launches: only the block size depends on it."""
    block = 128
    if torch.cuda.is_available():
        major, _minor = torch.cuda.get_device_capability()
        if major >= 8 and torch.cuda.current_device() >= 0:
            block = 256
    if torch.version.hip is not None:
        block = 64
    if _on_nvidia() and block < 128:
        block = 128
    if os.environ.get("PLANTED_INVISIBLE_BLOCK"):  # a library's tuning knob, unset here
        block = int(os.environ["PLANTED_INVISIBLE_BLOCK"])
    if torch.compiler.is_compiling():  # libraries skip their own checks while compiled
        return block
    return block


def _launch_twice(x: torch.Tensor, block: int) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    twice_kernel[(triton.cdiv(n_elements, block),)](x, out, n_elements, BLOCK=block)
    return out


def twice(x: torch.Tensor) -> torch.Tensor:
    return _launch_twice(x, _block_for_this_device())


def twice_reference(x: torch.Tensor) -> torch.Tensor:
    return x * 2 if _block_for_this_device() > 0 else x


def twice_shipped(x: torch.Tensor) -> torch.Tensor:
    """The library's own op: it asks again, then calls its launcher."""
    return twice(x.contiguous()) if _on_nvidia() or not torch.cuda.is_available() else x * 2


def _target_block() -> int:
    try:
        target = triton.runtime.driver.active.get_current_target()
    except RuntimeError:  # no GPU driver: Triton's interpreter has none active
        return 128
    return 256 if target.backend == "cuda" else 128


def twice_on_target(x: torch.Tensor) -> torch.Tensor:
    return _launch_twice(x, _target_block())


def twice_on_target_reference(x: torch.Tensor) -> torch.Tensor:
    return x * 2 if _target_block() > 0 else x


_COMMON = dict(kernels=(twice_kernel,), make_inputs=inputs.randn(1), shapes=inputs.shapes(300), example_shape=(40,),
               dtypes=(torch.float32,), tags=frozenset({"planted"}))

CASES = [
    Case(name="asks_the_device", launch=twice, reference=twice_reference, shipped=twice_shipped,
         description="launcher, reference and shipped op ask the device, versions, a cached probe, the environment", **_COMMON),
    Case(name="asks_triton_target", launch=twice_on_target, reference=twice_on_target_reference,
         description="launcher and reference ask Triton's active driver for its target", **_COMMON),
]

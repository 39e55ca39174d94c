"""A kernel the malformed user modules share (this module itself defines no case)."""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask), mask=mask)

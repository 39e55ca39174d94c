"""Environment probes: facts about this machine measured before any cell runs, never assumed."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from harness.case import DTYPES


@triton.jit
def _add_kernel(a, b, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(a + offsets, mask=mask) + tl.load(b + offsets, mask=mask), mask=mask)


def broken_dtypes(device: str) -> dict[str, str]:
    """Dtypes in which a plain Triton add of small integers is not exact here (Triton's CPU interpreter
    and bfloat16, for one): cells leave them out and the report says why, instead of charting them wrong."""
    broken: dict[str, str] = {}
    for name, dtype in DTYPES.items():
        a = torch.arange(-18, 19).to(device=device, dtype=dtype)
        b = torch.ones_like(a)
        out = torch.zeros_like(a)
        try:
            _add_kernel[(1,)](a, b, out, a.numel(), BLOCK=64)
            if not torch.equal(out, a + b):
                broken[name] = "a Triton add of small integers is not exact in this dtype here"
        except Exception as exc:  # noqa: BLE001 - any failure means the dtype cannot be tested here
            broken[name] = f"a Triton add fails in this dtype here: {type(exc).__name__}: {exc}"[:300]
    return broken

"""A histogram with tl.atomic_add into an int32 output, autotuned with reset_to_zero: the autotuner must
zero the counts before each config it times, or the timing runs add up in the result."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs

BINS = 16


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})],
    key=["n_elements"],
    reset_to_zero=["counts_ptr"],
)
@triton.jit
def histogram_kernel(x_ptr, counts_ptr, n_elements, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    bins = tl.minimum(tl.maximum(tl.floor((x + 4.0) * 2.0), 0.0), BINS - 1.0).to(tl.int32)
    tl.atomic_add(counts_ptr + bins, 1, mask=inside)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    counts = torch.zeros(BINS, dtype=torch.int32, device=x.device)  # atomics add into zeros
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)
    k.histogram_kernel[grid](x, counts, n_elements, BINS=BINS)
    return counts


def reference(x):
    bins = ((x.float() + 4.0) * 2.0).floor().clamp(0, BINS - 1).long()
    return torch.bincount(bins.reshape(-1), minlength=BINS).to(torch.int32)


CASE = Case(
    name="histogram_atomic",
    kernels=(histogram_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,
    tags=frozenset({"atomics", "autotune", "int32 output"}),
    description="tl.atomic_add into int32 counts; autotuned (2 configs) with reset_to_zero; no backward",
)

"""A library module that defines a kernel, its launcher (which calls the kernel as a module global) and cases over
them, built here at import, as a library's own test module might. user_modules/adapted_library_cases.py adapts
those cases: the Case objects are made in the kernel's module, which the warm-cache row edits in place and does
not run again."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def double_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask) * 2, mask=mask)


def double(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    double_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
    return out


def _double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


CASES = [
    Case(name="library_built_double", kernels=(double_kernel,), launch=double, reference=_double, make_inputs=inputs.randn(1),
         shapes=inputs.shapes(300), example_shape=(40,), dtypes=(torch.float32,), tags=frozenset({"fake_library"})),
]

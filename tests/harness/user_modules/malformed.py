"""One good case and four malformed ones: the good one must still run."""

import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
from copy_kernel import copy_kernel  # noqa: E402

from harness import Case, inputs  # noqa: E402


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.copy_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def launch_without_k(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x


COMMON = dict(kernels=(copy_kernel,), launch=launch, reference=lambda x: x.clone(),
              make_inputs=inputs.randn(1), shapes=inputs.shapes(512), example_shape=(8,))

CASES = [
    Case(name="user_good", **COMMON),
    Case(name="no_reference", **{**COMMON, "reference": None}),
    Case(name="launcher_without_k", **{**COMMON, "launch": launch_without_k}),
    Case(name="unknown_dtype", dtypes=("float16",), **COMMON),
    Case(name="inputs_do_not_match", **{**COMMON, "make_inputs": inputs.randn(2)}),
]

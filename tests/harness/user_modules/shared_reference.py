"""A case file whose launcher and reference another case file (reuses_reference.py) reuses through this file's module."""

import torch
import triton
from copy_kernel import copy_kernel

from harness import Case, inputs


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.copy_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


def copied(x):
    return x.clone()


def copying(name: str, reference, launcher=launch) -> Case:
    return Case(name=name, kernels=(copy_kernel,), launch=launcher, reference=reference, make_inputs=inputs.randn(1),
                shapes=inputs.shapes(256), example_shape=(64,), max_batch=256, dtypes=(torch.float32,), description=f"planted: {name}")


CASES = [copying("shared_reference", copied)]

"""A planted case file that tests/harness/test_many_case_files.py copies into several folders, each copy a kernels.py:
files of the same name whose module globals hold other values (FACTOR and SLOPE by the copy's folder) under the same
names, and whose cases are named after the folder. A copy's compiled code that read another copy's globals would be
wrong, and a new process that imported another copy, or this one under another name, would not find what was saved."""

import os

import torch
import triton
import triton.language as tl

from harness import Case, inputs

FOLDER = os.path.basename(os.path.dirname(os.path.abspath(__file__)))
FACTOR = {"one": 2, "two": 3}.get(FOLDER, 4)  # an int global: compiled code takes its value as a constant
SLOPE = float(FACTOR)  # a float global: compiled code reads it at each call


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.scale_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), FACTOR, BLOCK=128)
    return out


def scaled(x):
    return x * FACTOR


def sloped(x):
    return x * SLOPE


# `returns` names the launcher's one result: each style is then called from a function of its own, into which Dynamo
# inlines the reference, reading the reference's globals through its module's name.
CASES = [Case(name=f"{FOLDER}_{name}", kernels=(scale_kernel,), launch=launch, reference=reference, make_inputs=inputs.randn(1),
              shapes=inputs.shapes(256), example_shape=(64,), max_batch=256, returns=("out",), dtypes=(torch.float32,),
              description=f"planted: a kernels.py in {FOLDER}, {name}") for name, reference in (("scale", scaled), ("slope", sloped))]

"""Cases over an installed kernel library (tcm_fake_library, beside this file): the kernels and the launchers are the
library's; the case file only names them, importing the copy kernel through the package's re-export."""

import torch
from tcm_fake_library import copy_kernel
from tcm_fake_library.kernels import assigned_copy_kernel, launch_assigned_copy, launch_copy, launch_one_line_copy, one_line_copy_kernel

from harness import Case, inputs


def _copy(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


_COMMON = dict(reference=_copy, make_inputs=inputs.randn(1), shapes=inputs.shapes(300), example_shape=(40,),
               dtypes=(torch.float32,), tags=frozenset({"fake_library"}))

CASES = [
    Case(name="fake_library_copy", kernels=(copy_kernel,), launch=launch_copy, **_COMMON),
    Case(name="fake_library_one_line_copy", kernels=(one_line_copy_kernel,), launch=launch_one_line_copy, **_COMMON),
    Case(name="fake_library_assigned_copy", kernels=(assigned_copy_kernel,), launch=launch_assigned_copy, **_COMMON),
]

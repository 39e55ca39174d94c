"""Cases over a library written as libraries are (tests/harness/planted_library): its launcher used unchanged,
calling its kernel as a module global, and its ops as shipped; the harness's tests check what each records.

Not part of the default chart: the matrix loads them only when named with `--cases`.
"""

import torch
import triton

from harness import Backward, Case, inputs

from .planted_library import ScaleFunction, scale, scale_op, scale_op_wrong_fake, scale_plain
from .planted_library.kernels import scale_kernel


def _backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return scale(grad)  # the library's own launcher again: d(2x)/dx = 2


_COMMON = dict(
    kernels=(scale_kernel,),
    launch=scale,
    reference=lambda x: x * 2,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(300),
    example_shape=(40,),
    dtypes=(torch.float32,),
    backward=Backward(_backward, kernels=(scale_kernel,)),
    tags=frozenset({"planted"}),
)



def _scale_k(k, x: torch.Tensor) -> torch.Tensor:
    """The same launch written for the harness's namespace: the twin the globals form must match, cell for cell."""
    x = x.contiguous()
    out = k.empty_like(x)
    n_elements = out.numel()
    k.scale_kernel[lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)](x, out, 2.0, n_elements, BLOCK=128)
    return out


def _doubled_k(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return grad * 2


CASES = [
    Case(name="library_op", shipped=scale_op, description="a torch.library operator shipped with its fake and autograd", **_COMMON),
    Case(name="library_wrong_fake", shipped=scale_op_wrong_fake, description="a shipped operator whose fake has one row too many",
         **_COMMON),
    Case(name="library_function", shipped=ScaleFunction.apply, description="an autograd.Function's apply, shipped", **_COMMON),
    Case(name="library_plain", shipped=scale_plain, description="a plain function, shipped", **_COMMON),
    Case(name="library_k_form", **{**_COMMON, "launch": _scale_k, "backward": Backward(_doubled_k)},
         description="the namespace form of the same launch"),
]

"""Cases over tests/harness/planted_norm_library, its launchers used as they ship (no adapters): a tuple return with
`returns`/`outputs`, a backward that takes what the forward saved, two outputs with their gradients, and a backward
whose gradients alias (the case's error, with the fix)."""

import dataclasses

import torch

from harness import Backward, Case, Tolerance, inputs

from .planted_norm_library.norm import (
    RmsNormFunction,
    SinCosFunction,
    add,
    add_bwd_aliased,
    add_bwd_into_input,
    add_kernel,
    copy_kernel,
    rms_norm_bwd,
    rms_norm_bwd_kernel,
    rms_norm_fwd,
    rms_norm_fwd_kernel,
    sincos,
    sincos_bwd,
    sincos_kernel,
)

EPS = 1e-6


def make_rows(shape, dtype, device, generator):
    rows, cols = shape
    x = torch.randn((rows, cols), generator=generator)
    weight = 1 + 0.1 * torch.randn((cols,), generator=generator)
    return x.to(device=device, dtype=dtype), weight.to(device=device, dtype=dtype)


def rms_norm_reference(x, weight):
    """What the launcher returns: y, and the rstd the backward takes."""
    rstd = torch.rsqrt(x.float().pow(2).mean(-1) + EPS)
    return (x.float() * rstd[:, None] * weight.float()).to(x.dtype), rstd


RMS_NORM = Case(
    name="lib_rms_norm",
    kernels=(rms_norm_fwd_kernel,),
    launch=rms_norm_fwd,
    schema="(Tensor x, Tensor weight) -> (Tensor, Tensor)",  # unannotated, with a defaulted eps left out
    returns=("y", "rstd"),
    outputs=("y",),
    reference=rms_norm_reference,
    make_inputs=make_rows,
    shapes=inputs.shapes(16, 40, min_size=(1, 2)),
    example_shape=(4, 24),
    dtypes=(torch.float32,),
    unbatched=frozenset({"weight"}),
    backward=Backward(rms_norm_bwd, kernels=(rms_norm_bwd_kernel,), takes=("grad", "x", "rstd", "weight")),
    tolerances={torch.float32: Tolerance(atol=1e-4, rtol=1e-4)},
    shipped=RmsNormFunction.apply,
)

SINCOS = Case(
    name="lib_sincos",
    kernels=(sincos_kernel,),
    launch=sincos,
    schema="(Tensor x) -> (Tensor, Tensor)",
    returns=("sin", "cos"),
    reference=lambda x: (torch.sin(x), torch.cos(x)),
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(300),
    example_shape=(40,),
    dtypes=(torch.float32,),
    backward=Backward(sincos_bwd, takes=("grad_sin", "grad_cos", "sin", "cos")),
    tolerances={torch.float32: Tolerance(atol=1e-5, rtol=1e-4)},
    shipped=SinCosFunction.apply,
)

ADD_ALIASED = Case(
    name="lib_add_aliased",
    kernels=(add_kernel,),
    launch=add,
    schema="(Tensor a, Tensor b) -> Tensor",
    reference=lambda a, b: a + b,
    make_inputs=inputs.randn(2),
    shapes=inputs.shapes(300),
    example_shape=(40,),
    dtypes=(torch.float32,),
    backward=Backward(add_bwd_aliased, kernels=(copy_kernel,)),
)

ADD_INTO_INPUT = dataclasses.replace(ADD_ALIASED, name="lib_add_into_input", backward=Backward(add_bwd_into_input, kernels=(copy_kernel,)))

CASES = [RMS_NORM, SINCOS, ADD_ALIASED, ADD_INTO_INPUT]

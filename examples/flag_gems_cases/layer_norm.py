"""FlagGems's layer norm (flag_gems.layer_norm's kernels): autotuned @libentry() kernels keyed on the sizes, a
launcher that returns (y, mean, rstd), and a backward launcher that takes the forward's mean and rstd.

The library's launcher, layer_norm(input, normalized_shape, weight, bias, eps), returns (y, mean, rstd), mean and
rstd one per row in the input's dtype; the case takes the tuple as it is (`returns`): y is the op's output, mean and
rstd what the forward keeps for the backward. Its kernels are @libentry() over @triton.autotune (key M and N) over
@triton.jit: layer_norm_persistent_kernel_multiline for rows of at most 128 columns, layer_norm_persistent_kernel up
to 4096 (3 configs each: num_warps 4, 8, 16), layer_norm_loop_kernel beyond (12 configs; never drawn here). The
backward, layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask), launches
layer_norm_backward_kernel and weight_bias_backward_kernel (12 configs each, keyed on the sizes).

FlagGems registers these for aten.native_layer_norm and its backward only under flag_gems.enable(), which the cases
never call; it ships no autograd.Function for them, so the case has no shipped column. The case's launcher and
backward pass normalized_shape (the last dim), eps and the output mask.
"""

import flag_gems  # noqa: F401  (the library; importing it registers no op: flag_gems.enable() is never called)
import torch
from flag_gems.ops.layernorm import (
    layer_norm,
    layer_norm_backward,
    layer_norm_backward_kernel,
    layer_norm_loop_kernel,
    layer_norm_persistent_kernel,
    layer_norm_persistent_kernel_multiline,
    weight_bias_backward_kernel,
)

from harness import Backward, Case, Tolerance, inputs

EPS = 1e-5  # the library's default eps


def needs_a_cuda_gpu(device: str) -> str | None:
    return None if device.startswith("cuda") else "FlagGems runs on a GPU only"


def launch(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor):
    """The library's launcher over the last dim: (y, mean, rstd)."""
    return layer_norm(x, [x.shape[-1]], weight, bias, EPS)


def backward(dy, x, mean, rstd, weight, bias):
    """The library's backward launcher, given the forward's mean and rstd: (dx, dweight, dbias)."""
    return layer_norm_backward(dy, x, [x.shape[-1]], mean, rstd, weight, bias, [True, True, True])


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    x = torch.randn((rows, cols), generator=generator)
    weight = 1 + 0.1 * torch.randn((cols,), generator=generator)
    bias = 0.1 * torch.randn((cols,), generator=generator)
    return tuple(t.to(device=device, dtype=dtype) for t in (x, weight, bias))


def reference(x, weight, bias):
    """What the launcher returns: y, and each row's mean and 1 / sqrt(variance + eps), in the input's dtype."""
    h = x.float()
    mean = h.mean(-1)
    rstd = torch.rsqrt(h.var(-1, unbiased=False) + EPS)
    y = torch.nn.functional.layer_norm(h, (h.shape[-1],), weight.float(), bias.float(), EPS)
    return y.to(x.dtype), mean.to(x.dtype), rstd.to(x.dtype)


CASE = Case(
    name="fg_layer_norm",
    kernels=(layer_norm_persistent_kernel_multiline, layer_norm_persistent_kernel, layer_norm_loop_kernel),
    launch=launch,
    returns=("y", "mean", "rstd"),
    outputs=("y",),
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(64, 1100),  # (rows, cols); both persistent kernels (at most 128 columns, and more)
    example_shape=(4, 129),
    max_batch=1 << 14,
    unbatched=frozenset({"weight", "bias"}),
    backward=Backward(backward, kernels=(layer_norm_backward_kernel, weight_bias_backward_kernel),
                      takes=("grad", "x", "mean", "rstd", "weight", "bias")),
    tolerances={torch.float32: Tolerance(atol=1e-4, rtol=1e-4)},  # mean and variance in another order
    requires=needs_a_cuda_gpu,
    tags=frozenset({"flag_gems", "library", "reduction", "normalization", "training", "autotuned"}),
    description="FlagGems layer_norm: autotuned @libentry() kernels keyed on the sizes; its (y, mean, rstd) as it is "
                "(adapter: normalized_shape, eps); backward: the library's layer_norm_backward given mean and rstd "
                "(autotuned dx and dweight/dbias kernels)",
)

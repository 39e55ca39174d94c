"""FlagGems's skip_layer_norm, layer_norm(x + residual) with a weight and a bias: a @libentry() kernel launched
from an autograd.Function, SkipLayerNorm, that has a forward and no backward.

The library has no launcher apart from SkipLayerNorm.forward(ctx, x, residual, normalized_shape, weight, bias,
eps): the kernel launch is its body, which never touches ctx. The case's launcher is an adapter that calls that
body as a function (ctx=None), bound to a module global so the harness's rebinding can follow it to
skip_layer_norm_kernel (@libentry() over @triton.jit(do_not_specialize=["eps"]), a program per row, no
autotuning), which it launches inside `with torch_device_fn.device(x.device):` after a logger.debug.

The shipped op is flag_gems.skip_layer_norm, which calls SkipLayerNorm.apply (adapter: normalized_shape, eps).
With no backward declared, autograd raises when a training row asks the shipped op for a gradient. The case's
backward, for the harness's styles, is PyTorch's layer-norm gradient (the same for x and residual).
"""

import flag_gems  # noqa: F401  (the library; importing it registers no op: flag_gems.enable() is never called)
import torch
from flag_gems.fused.skip_layernorm import SkipLayerNorm, skip_layer_norm, skip_layer_norm_kernel

from harness import Backward, Case, Tolerance, inputs

EPS = 1e-5  # the library's default eps

# The library's launch code: a @staticmethod, so through the class it is a plain function.
skip_layer_norm_forward = SkipLayerNorm.forward


def needs_a_cuda_gpu(device: str) -> str | None:
    return None if device.startswith("cuda") else "FlagGems runs on a GPU only"


def launch(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """SkipLayerNorm.forward's body with no autograd context (it uses none), normalizing over the last dim."""
    return skip_layer_norm_forward(None, x, residual, [x.shape[-1]], weight, bias, EPS)


def shipped(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """flag_gems.skip_layer_norm with normalized_shape = the last dim and eps: SkipLayerNorm.apply."""
    return skip_layer_norm(x, residual, [x.shape[-1]], weight, bias, EPS)


def backward(
    grad: torch.Tensor, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Layer norm's gradient at h = x + residual (dx = dresidual = dh); dweight and dbias sum over the rows."""
    h = x.float() + residual.float()
    g = grad.float()
    rstd = torch.rsqrt(h.var(dim=-1, unbiased=False, keepdim=True) + EPS)
    xhat = (h - h.mean(dim=-1, keepdim=True)) * rstd
    gw = g * weight.float()
    dh = rstd * (gw - gw.mean(dim=-1, keepdim=True) - xhat * (gw * xhat).mean(dim=-1, keepdim=True))
    return dh.to(x.dtype), dh.to(residual.dtype), (g * xhat).sum(dim=0).to(weight.dtype), g.sum(dim=0).to(bias.dtype)


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    x = torch.randn((rows, cols), generator=generator)
    residual = torch.randn((rows, cols), generator=generator)
    weight = 1 + 0.1 * torch.randn((cols,), generator=generator)
    bias = 0.1 * torch.randn((cols,), generator=generator)
    return tuple(t.to(device=device, dtype=dtype) for t in (x, residual, weight, bias))


def reference(x, residual, weight, bias):
    h = x.float() + residual.float()
    return torch.nn.functional.layer_norm(h, (h.shape[-1],), weight.float(), bias.float(), EPS).to(x.dtype)


CASE = Case(
    name="fg_skip_layer_norm",
    kernels=(skip_layer_norm_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(64, 1100),  # (rows, cols); a program per row
    example_shape=(4, 129),
    max_batch=1 << 14,
    unbatched=frozenset({"weight", "bias"}),
    backward=Backward(backward),
    tolerances={torch.float32: Tolerance(atol=1e-4, rtol=1e-4)},  # mean and variance in another order
    shipped=shipped,
    requires=needs_a_cuda_gpu,
    tags=frozenset({"flag_gems", "library", "reduction", "normalization"}),
    description="FlagGems skip_layer_norm: @libentry() skip_layer_norm_kernel launched by SkipLayerNorm.forward "
                "(called with ctx=None); shipped: skip_layer_norm -> SkipLayerNorm.apply, an autograd.Function "
                "with no backward (adapter); backward: PyTorch",
)

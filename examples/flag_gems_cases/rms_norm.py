"""FlagGems's RMSNorm (flag_gems.rms_norm): @libentry() kernels, and an autograd.Function, RmsNorm, whose
backward launches two more @libentry() kernels.

The library's launcher, rms_norm_forward(x, normalized_shape, weight, eps), returns (y, inv_rms); the case takes
that tuple as it is (`returns`): y is the op's output, inv_rms what the forward keeps for the backward, as RmsNorm
saves it. The case's launcher only passes the last dim as normalized_shape. At the drawn widths (up to 1100
columns, at most 4096) it launches rms_norm_kernel (@libentry() over @triton.jit, one program per row, no
autotuning); wider rows would take the autotuned rms_norm_loop_kernel (12 configs), which the case never draws.
The launcher runs its kernels inside `with torch_device_fn.device(x.device):` (torch.cuda.device) and calls
logger.debug first, as every FlagGems op does.

The shipped op is RmsNorm.apply, through an adapter that adds normalized_shape and eps. The case's backward is the
library's rms_norm_backward(dy, x, inv_rms, normalized_shape, weight, eps), given the forward's inv_rms
(Backward takes it by name), as RmsNorm.backward gives it.
"""

import flag_gems  # noqa: F401  (the library; importing it registers no op: flag_gems.enable() is never called)
import torch
from flag_gems.ops.rms_norm import (
    RmsNorm,
    rms_norm_backward,
    rms_norm_forward,
    rms_norm_grad_dw_kernel,
    rms_norm_grad_dx_kernel,
    rms_norm_kernel,
)

from harness import Backward, Case, Tolerance, inputs

EPS = 1e-5  # the library's default eps


def needs_a_cuda_gpu(device: str) -> str | None:
    return None if device.startswith("cuda") else "FlagGems runs on a GPU only"


def launch(x: torch.Tensor, weight: torch.Tensor):
    """The library's launcher, normalizing over the last dim: (y, inv_rms)."""
    return rms_norm_forward(x, [x.shape[-1]], weight, EPS)


def shipped(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The library's autograd.Function, as flag_gems.rms_norm(x, normalized_shape, weight, eps) calls it."""
    return RmsNorm.apply(x, [x.shape[-1]], weight, EPS)


def backward(dy, x, inv_rms, weight):
    """The library's backward launcher (rms_norm_grad_dx_kernel, then rms_norm_grad_dw_kernel's partial sums over
    16-row blocks, summed in PyTorch), given the forward's inv_rms: (dx, dweight)."""
    return rms_norm_backward(dy, x, inv_rms, [x.shape[-1]], weight, EPS)


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    x = torch.randn((rows, cols), generator=generator)
    weight = 1 + 0.1 * torch.randn((cols,), generator=generator)
    return tuple(t.to(device=device, dtype=dtype) for t in (x, weight))


def reference(x, weight):
    """What the launcher returns: y, and inv_rms = 1 / sqrt(mean(x^2) + eps) in float32, one per row."""
    y = torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), weight.float(), EPS).to(x.dtype)
    return y, torch.rsqrt(x.float().pow(2).mean(-1) + EPS)


CASE = Case(
    name="fg_rms_norm",
    kernels=(rms_norm_kernel,),
    launch=launch,
    returns=("y", "inv_rms"),
    outputs=("y",),
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(64, 1100),  # (rows, cols); cols <= 4096 keeps to the untuned rms_norm_kernel
    example_shape=(4, 129),
    max_batch=1 << 14,
    unbatched=frozenset({"weight"}),
    backward=Backward(backward, kernels=(rms_norm_grad_dx_kernel, rms_norm_grad_dw_kernel), takes=("grad", "x", "inv_rms", "weight")),
    tolerances={torch.float32: Tolerance(atol=1e-4, rtol=1e-4)},  # sums of squares in another order
    shipped=shipped,
    requires=needs_a_cuda_gpu,
    tags=frozenset({"flag_gems", "library", "reduction", "normalization", "training"}),
    description="FlagGems rms_norm: @libentry() rms_norm_kernel via the library's rms_norm_forward (adapter: "
                "normalized_shape, eps), its (y, inv_rms) as it is; shipped: RmsNorm.apply (adapter); backward: the "
                "library's rms_norm_backward given inv_rms (@libentry() dx and dw kernels)",
)

"""FlagGems's softmax over the last dim: a @libentry() kernel over @triton.heuristics over @triton.jit, no
autotuning in the forward.

The library's softmax(self, dim, half_to_float=False) is the function FlagGems registers for aten._softmax
under flag_gems.enable(); called directly it is a plain function with no autograd. The case's launcher and its
shipped op are the same adapter call, softmax(x, -1): the launcher is what the harness wraps in every style,
the shipped column calls it as users do. With dim = -1 the post-dim size K is 1, so it launches
softmax_kernel_inner only (TILE_N = next_power_of_2(N) from its heuristics, one tile per program at these
widths), inside `with torch_device_fn.device(self.device):` after a logger.debug. For half precision that
kernel computes exp, sum and divide in the input's dtype, hence the wider half-precision tolerances.

The backward is PyTorch's: the library's softmax_backward launches softmax_backward_kernel_inner, a @libentry()
over a @triton.autotune of 5 configs (TILE_N 32..1024) keyed on (M, N), which every training cell would time
again on each new size; and FlagGems ships no autograd.Function for softmax (autograd comes from aten's formula
once enable() registers both halves), so the shipped column has no gradient.
"""

import flag_gems  # noqa: F401  (the library; importing it registers no op: flag_gems.enable() is never called)
import torch
from flag_gems.ops.softmax import softmax, softmax_kernel_inner

from harness import Backward, Case, Tolerance, inputs

DIM = -1


def needs_a_cuda_gpu(device: str) -> str | None:
    return None if device.startswith("cuda") else "FlagGems runs on a GPU only"


def launch(x: torch.Tensor) -> torch.Tensor:
    """The library's softmax over the last dim, output in the input's dtype (half_to_float=False)."""
    return softmax(x, DIM, False)


def shipped(x: torch.Tensor) -> torch.Tensor:
    """flag_gems.softmax as a user calls it: the same function with dim given."""
    return softmax(x, DIM)


def backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """dx = y * (g - sum(g * y)) over the softmax dim, y = softmax(x)."""
    y = torch.softmax(x.float(), dim=DIM)
    g = grad.float()
    return (y * (g - (g * y).sum(dim=DIM, keepdim=True))).to(x.dtype)


def reference(x):
    return torch.softmax(x.float(), dim=DIM).to(x.dtype)


CASE = Case(
    name="fg_softmax",
    kernels=(softmax_kernel_inner,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(1, scale=2.0),
    shapes=inputs.shapes(64, 1100),  # (rows, cols); a program per row
    example_shape=(4, 129),
    max_batch=1 << 14,
    backward=Backward(backward),
    tolerances={
        torch.float16: Tolerance(atol=1e-3, rtol=4e-3),  # exp, sum and divide in float16
        torch.bfloat16: Tolerance(atol=1e-2, rtol=3e-2),  # ... and in bfloat16
    },
    shipped=shipped,
    requires=needs_a_cuda_gpu,
    tags=frozenset({"flag_gems", "library", "reduction"}),
    description="FlagGems softmax(x, -1): @libentry() over @triton.heuristics softmax_kernel_inner; launcher and "
                "shipped are the same plain function (adapter: dim); no autograd shipped; backward: PyTorch",
)

"""The tutorial's add kernel under @triton.autotune with `configs` and `key`, the form torch.compile supports."""

import torch
import triton

from .add import add_kernel, backward, numel
from harness import Backward, Case, inputs

add_kernel_autotuned = triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 64}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_SIZE": 128}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE": 256}, num_stages=3, num_warps=8),
    ],
    key=["n_elements"],
)(add_kernel)


def launch(k, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    k.add_kernel[grid](x, y, out, n_elements)  # BLOCK_SIZE comes from the config the autotuner picks
    return out


CASE = Case(
    name="add_autotuned",
    kernels=(add_kernel_autotuned,),
    launch=launch,
    reference=lambda x, y: x + y,
    make_inputs=inputs.randn(2),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,  # --perf times 4M elements
    backward=Backward(backward),
    flops=numel,
    tags=frozenset({"elementwise", "autotune", "tutorial"}),
    description="three configs keyed on n_elements; the block size comes from the chosen config",
)

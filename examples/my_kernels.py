"""An example of bringing your own kernel: `triton-compat-matrix run -n auto --cases examples/my_kernels.py`.

A case module holds one or more `Case`s at module level. Each names its Triton kernels, a launcher that
calls them, a plain PyTorch reference, how to make inputs and which shapes hypothesis may draw.
"""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, n_elements, slope, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x > 0, x, x * slope), mask=mask)


SLOPE = 0.01


def launch(k, x: torch.Tensor) -> torch.Tensor:
    # `k` holds the kernels and the allocators, so the harness can wrap the same launcher in every style.
    out = k.empty_like(x)  # filled with NaN by the harness: an element the kernel misses fails the check
    n = x.numel()
    k.leaky_relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, SLOPE, BLOCK=1024)
    return out


def reference(x):
    return torch.nn.functional.leaky_relu(x, SLOPE)


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    # With no kernels listed in Backward, the gradient is plain PyTorch.
    return torch.where(x > 0, grad, grad * SLOPE)


CASE = Case(
    name="my_leaky_relu",
    kernels=(leaky_relu_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(1),  # one standard-normal tensor of the drawn shape and dtype
    shapes=inputs.shapes(1 << 16),  # 1-D sizes up to 65536, with 1 and both sides of each power of two
    example_shape=(300,),  # what export and AOTInductor trace with; dim 0 is the dynamic batch
    max_batch=1 << 16,
    backward=Backward(backward),
    tags=frozenset({"elementwise", "example"}),
    description="leaky ReLU with a runtime float slope",
)

"""torchao's INT8 matmul with row and column scales (torchao.prototype.quantized_training.int8_mm): an autotuned
kernel of 27 configs keyed on the sizes, launched by the CUDA implementation the library registers for its op.

C = (A @ B) * row_scale[:, None] * col_scale[None, :], A (M, K) and B (K, N) in int8 on the tensor cores, the int32
sums scaled in float32 and stored in the scales' dtype. _scaled_int8_mm_kernel is @triton.autotune (27 configs of
BLOCK_M/N/K, num_stages and num_warps; key M, N, K and the inner strides) over @triton.heuristics (EVEN_K) over
@triton.jit: every new size the examples draw times its 27 configs again. The library defines the op
torchao::scaled_int8_mm with torch.library.Library and registers a Meta kernel and scaled_int8_mm_cuda, the
launcher the case uses as it ships (unannotated, so the case gives the schema); the op itself is the shipped
column. It has no autograd: the case has no backward, and its scales take no gradient (no_grad), as in the library's
int8 training, whose own autograd.Function differentiates around them.
"""

import torch
from torchao.prototype.quantized_training.int8_mm import _scaled_int8_mm_kernel, scaled_int8_mm_cuda

from harness import Case, inputs

N = 96  # B's columns: one block of the 64- and 32-wide configs and a masked edge of the 128- and 256-wide ones


def needs_a_cuda_gpu(device: str) -> str | None:
    return None if device.startswith("cuda") else "torchao registers scaled_int8_mm for CUDA only"


def make_inputs(shape, dtype, device, generator):
    rows, inner = shape
    a = torch.randint(-128, 128, (rows, inner), generator=generator, dtype=torch.int8)
    b = torch.randint(-128, 128, (inner, N), generator=generator, dtype=torch.int8)
    row_scale = 1e-3 * (1 + torch.rand((rows,), generator=generator))
    col_scale = 1e-2 * (1 + torch.rand((N,), generator=generator))
    return a.to(device), b.to(device), row_scale.to(device=device, dtype=dtype), col_scale.to(device=device, dtype=dtype)


def reference(A, B, row_scale, col_scale):
    """The int32 sums (exact in float64 for these sizes), scaled in float32 as the kernel does, in the scales' dtype."""
    sums = (A.double() @ B.double()).float()
    return (sums * row_scale.float()[:, None] * col_scale.float()[None, :]).to(row_scale.dtype)


CASE = Case(
    name="tao_scaled_int8_mm",
    kernels=(_scaled_int8_mm_kernel,),
    launch=scaled_int8_mm_cuda,
    schema="(Tensor A, Tensor B, Tensor row_scale, Tensor col_scale) -> Tensor",
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(512, 320),  # (M, K): A's rows and the inner size, both in the autotuner's key
    example_shape=(64, 128),
    unbatched=frozenset({"B", "col_scale"}),
    no_grad=frozenset({"row_scale", "col_scale"}),  # quantization's scales, not parameters: nothing is trained through them
    shipped=torch.ops.torchao.scaled_int8_mm,
    requires=needs_a_cuda_gpu,
    tags=frozenset({"torchao", "library", "matmul", "int8", "autotuned"}),
    description="torchao scaled_int8_mm: an INT8 matmul scaled by rows and columns, @triton.autotune of 27 configs keyed "
                "on M, N, K; its CUDA launcher as it ships (schema given), the library's op as the shipped column",
)

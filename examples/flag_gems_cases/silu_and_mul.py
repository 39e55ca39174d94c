"""FlagGems's silu_and_mul, silu(x) * y: a pointwise_dynamic op, shipped as an autograd.Function (SiluAndMul)
whose backward is a second pointwise_dynamic op.

@pointwise_dynamic turns a scalar @triton.jit function (silu_and_mul_kernel(x, y)) into a
PointwiseDynamicFunction object, not a Triton kernel. On its first call for a task rank it generates a module
(written to ~/.flaggems/code_cache, loaded with importlib, kept out of sys.modules) holding a Python wrapper and
a @libentry() @triton.jit kernel for that rank, and keeps the wrapper in the object's `overloads` dict. So the
kernel a call launches exists only after a first call, and a launcher that calls the PointwiseDynamicFunction
reaches it through an object and a dict, which the harness's rebinding cannot follow: the case's check would
reject it. This case therefore asks the library for the rank-1 overload now (PointwiseDynamicFunction.instantiate,
the object the op itself caches and calls) and lists that overload's kernel, and its launcher calls the
generated wrapper directly. Rank 1 is what pointwise_dynamic runs for inputs of one shape that are all
contiguous (its fast path views every operand as one flat dimension); the launcher makes them contiguous and
flat, as that path does (it wraps them in StridedBuffer views; flat tensor views are the same memory).

The shipped op, SiluAndMul.apply, goes the library's whole way: the PointwiseDynamicFunction's argument checks,
type promotion, output allocation and StridedBuffer wrapping, then the same cached wrapper and kernel. Its
backward (declared without @staticmethod) calls silu_and_mul_grad_kernel, a pointwise_dynamic op with two
outputs, which the case's backward calls the same way as the forward, through its rank-1 overload. The
generated wrappers launch inside `with torch_device_fn.device(in0.device.index):`; SiluAndMul.forward and
.backward call logger.debug first.
"""

import flag_gems  # noqa: F401  (the library; importing it registers no op: flag_gems.enable() is never called)
import torch
from flag_gems.fused.silu_and_mul import SiluAndMul, silu_and_mul_grad_kernel, silu_and_mul_kernel

from harness import Backward, Case, Tolerance, inputs


def _rank_1(op):
    """The library's generated rank-1 wrapper of a pointwise_dynamic op, and the kernel it launches."""
    wrapper = op.instantiate(1)  # generated once per process and cached in op.overloads, where calls to op find it
    kernel = wrapper.__globals__[op.get_kernel_info(1).kernel_name]  # a global of the generated module
    return wrapper, kernel


silu_and_mul_wrapper_rank_1, silu_and_mul_kernel_rank_1 = _rank_1(silu_and_mul_kernel)
silu_and_mul_grad_wrapper_rank_1, silu_and_mul_grad_kernel_rank_1 = _rank_1(silu_and_mul_grad_kernel)


def needs_a_cuda_gpu(device: str) -> str | None:
    return None if device.startswith("cuda") else "FlagGems runs on a GPU only"


def launch(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """pointwise_dynamic's fast path: same-shape contiguous operands as one flat dim, the output allocated like
    the first (both inputs have one dtype, so its promotion gives that dtype), then the generated wrapper."""
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    silu_and_mul_wrapper_rank_1(x.view(-1), y.view(-1), out0=out.view(-1))
    return out


def backward(grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """SiluAndMul.backward's silu_and_mul_grad_kernel(x, y, grad) -> (dx, dy), through its rank-1 wrapper."""
    x, y, grad = x.contiguous(), y.contiguous(), grad.contiguous()
    dx, dy = torch.empty_like(x), torch.empty_like(y)
    silu_and_mul_grad_wrapper_rank_1(x.view(-1), y.view(-1), grad.view(-1), out0=dx.view(-1), out1=dy.view(-1))
    return dx, dy


def reference(x, y):
    return (torch.nn.functional.silu(x.float()) * y.float()).to(x.dtype)


CASE = Case(
    name="fg_silu_and_mul",
    kernels=(silu_and_mul_kernel_rank_1,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(2),
    shapes=inputs.shapes(64, 1100),  # (tokens, hidden); any shape runs as one flat dim
    example_shape=(4, 129),
    max_batch=1 << 14,
    backward=Backward(backward, kernels=(silu_and_mul_grad_kernel_rank_1,)),
    tolerances={torch.float32: Tolerance(atol=1e-5, rtol=1e-4)},  # tl.exp and tl.fdiv are approximate in float32
    shipped=SiluAndMul.apply,  # what flag_gems.silu_and_mul(x, y) calls
    requires=needs_a_cuda_gpu,
    tags=frozenset({"flag_gems", "library", "elementwise", "training", "pointwise_dynamic"}),
    description="FlagGems silu_and_mul: pointwise_dynamic's generated rank-1 wrapper and @libentry() kernel "
                "(instantiated at import: the op object hides them); shipped: SiluAndMul.apply; backward: the "
                "generated rank-1 silu_and_mul_grad kernel (two outputs)",
)

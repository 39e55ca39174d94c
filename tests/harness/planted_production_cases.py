"""Cases for the rows production adds (inference mode, no recompile, a fresh process loading what was saved), each
meeting them in a known way on the CPU: a plain kernel that passes them, a program whose code branches on the batch
(a recompile for a new size), and one that refuses to run under inference mode."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.double_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out


def branches_on_batch(x):
    """x * 2, written with a branch on the batch: the compiled code guards on it, and a batch across it recompiles."""
    return x * 2 if x.shape[0] > 40 else x + x


def refuses_inference_mode(x):
    if not torch.is_grad_enabled():  # inference mode turns autograd off (Dynamo traces is_grad_enabled, not is_inference_mode_enabled)
        raise RuntimeError("planted: this program refuses to run without autograd, as under torch.inference_mode()")
    return x * 2


def _case(name: str, reference) -> Case:
    return Case(name=name, kernels=(double_kernel,), launch=launch, reference=reference, make_inputs=inputs.randn(1),
                shapes=inputs.shapes(256), example_shape=(64,), max_batch=256, dtypes=(torch.float32,),
                description=f"planted: {name}")


CASES = [
    _case("prod_double", lambda x: x * 2),
    _case("prod_branches", branches_on_batch),
    _case("prod_no_inference", refuses_inference_mode),
]

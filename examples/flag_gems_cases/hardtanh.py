"""FlagGems's experimental hardtanh: a plain @triton.jit kernel that a helper of the library launches as a module
global, two calls below the op (hardtanh -> _launch_hardtanh -> hardtanh_kernel[grid]).

The op refuses CPU tensors (`assert x.is_cuda`): the CPU-fallback row records it. It has no backward of its
own; the case's backward is PyTorch's hardtanh gradient.
"""

import flag_gems  # noqa: F401  (the library; importing it registers no op: flag_gems.enable() is never called)
import torch
from flag_gems.experimental_ops.hardtanh import hardtanh, hardtanh_kernel

from harness import Backward, Case, inputs

# hardtanh's own defaults, which the launcher and the shipped call, hardtanh(x), use.
MIN_VAL = -1.0
MAX_VAL = 1.0


def needs_a_cuda_gpu(device: str) -> str | None:
    return None if device.startswith("cuda") else "FlagGems runs on a GPU only"


def backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """PyTorch's hardtanh_backward: the gradient passes where min_val < x < max_val, and is 0 elsewhere."""
    return torch.where((x > MIN_VAL) & (x < MAX_VAL), grad, torch.zeros_like(grad))


def reference(x):
    return torch.nn.functional.hardtanh(x, MIN_VAL, MAX_VAL)


CASE = Case(
    name="fg_hardtanh",
    kernels=(hardtanh_kernel,),
    launch=hardtanh,  # the library's op itself; its bounds keep their defaults (the schema leaves them out)
    schema="(Tensor x) -> Tensor",
    reference=reference,
    make_inputs=inputs.randn(1, scale=2.0),  # about a third of the values lie outside [-1, 1]
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 16,
    backward=Backward(backward),
    shipped=hardtanh,  # flag_gems.experimental_ops.hardtanh.hardtanh(x): a plain function
    requires=needs_a_cuda_gpu,
    tags=frozenset({"flag_gems", "library", "elementwise"}),
    description="FlagGems experimental hardtanh: plain @triton.jit hardtanh_kernel launched by the library's helper "
                "_launch_hardtanh, two calls below the op; shipped: hardtanh (plain function); backward: PyTorch",
)

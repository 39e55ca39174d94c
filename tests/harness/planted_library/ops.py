"""The library's shipped ops over its launcher."""

import torch

from .kernels import scale_forward


def scale(x: torch.Tensor) -> torch.Tensor:
    """x * 2, the launcher as users of the library call it."""
    return scale_forward(x, 2.0)


scale_plain = scale  # shipped as a plain function


class ScaleFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return scale_forward(x, 2.0)

    @staticmethod
    def backward(ctx, grad):
        return scale_forward(grad, 2.0)


@torch.library.custom_op("tcm_planted_lib::scale", mutates_args=())
def scale_op(x: torch.Tensor) -> torch.Tensor:
    return scale_forward(x, 2.0)


@scale_op.register_fake
def _(x):
    return torch.empty_like(x)


scale_op.register_autograd(lambda ctx, grad: grad * 2)


@torch.library.custom_op("tcm_planted_lib::scale_wrong_fake", mutates_args=())
def scale_op_wrong_fake(x: torch.Tensor) -> torch.Tensor:
    return scale_forward(x, 2.0)


@scale_op_wrong_fake.register_fake
def _(x):
    # The library's mistake: the fake says one more element than the kernel returns. Eager never calls it.
    return x.new_empty((x.shape[0] + 1, *x.shape[1:]))

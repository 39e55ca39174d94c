"""Training rows: run forward and backward and return the outputs with every input's gradient.

Plain PyTorch: a cell's reproducer prints this file as it is."""

from typing import Any, Callable

import torch


def leaves(inputs: tuple[Any, ...], no_grad: tuple[int, ...] = ()) -> tuple[Any, ...]:
    """Floating-point tensor inputs become leaves that require grad, like a model's activations; those at the positions
    `no_grad` (a case's buffers: Case.no_grad) stay as they are. Each is a copy with the input's own strides: clone()
    makes a view with gaps between its rows contiguous, and the row would not test the view the case draws."""
    return tuple(
        torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device).copy_(x.detach()).requires_grad_()
        if isinstance(x, torch.Tensor) and x.is_floating_point() and i not in no_grad else x
        for i, x in enumerate(inputs)
    )


def _cotangent(output: torch.Tensor) -> torch.Tensor:
    # Not uniform, so a backward that swaps or sums elements cannot pass by symmetry.
    return torch.linspace(-1.0, 1.0, output.numel(), device=output.device).reshape(output.shape)


def step(forward: Callable[..., Any], no_grad: tuple[int, ...] = ()) -> Callable[..., list[Any]]:
    """fn(*inputs) -> [outputs..., gradient of each tensor input that takes one (None where autograd gives none)].

    Only the forward is compiled (backward runs from AOTAutograd's compiled graph). An output that is
    cut off from the autograd graph (a raw kernel's) leaves its inputs without gradients: the harness
    compares them with the reference's and reports them missing, never as a pass.
    """

    def train_step(*inputs: Any) -> list[Any]:
        xs = leaves(inputs, no_grad)
        result = forward(*xs)
        outputs = [o for o in (result if isinstance(result, (tuple, list)) else (result,)) if o is not None]
        wrt = [x for x in xs if isinstance(x, torch.Tensor) and x.requires_grad]
        differentiable = [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad]
        grads: list[Any] = [None] * len(wrt)
        if differentiable and wrt:
            loss = sum((o.float() * _cotangent(o)).sum() for o in differentiable)
            grads = list(torch.autograd.grad(loss, wrt, allow_unused=True))
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in outputs] + grads

    return train_step

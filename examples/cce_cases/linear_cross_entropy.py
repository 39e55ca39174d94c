"""Cut Cross-Entropy's linear cross-entropy (cut_cross_entropy.linear_cross_entropy): the loss of e @ c.T against
targets without materializing the logits, its forward and backward each a Triton kernel.

The library's LinearCrossEntropyFunction.forward computes lse = cce_lse_forward_kernel(e, c) and the target logit
(indexed_neg_dot_forward_kernel), keeps lse, and its backward calls cce_backward_kernel(grad, e, c, lse, ...). The
library exposes no launcher returning both, so the case's launcher is that forward's two calls, reduction "none",
returning (nll, lse) (`returns`): nll is the op's output, lse what the backward takes. The backward is the library's
cce_backward_kernel, given lse, with no vocabulary filtering (filter_eps=None: exact gradients); it computes the
classifier's gradient only where c requires grad, and otherwise returns c itself as that gradient.

The shipped op is the library's linear_cross_entropy(e, c, targets, reduction="none", filter_eps=None) (adapter:
the two keywords): impl "cce", through LinearCrossEntropyFunction (an autograd.Function).
"""

import torch
from cut_cross_entropy import linear_cross_entropy
from cut_cross_entropy.cce_backward import _cce_backward_kernel, cce_backward_kernel
from cut_cross_entropy.cce_lse_forward import _cce_lse_forward_kernel, cce_lse_forward_kernel
from cut_cross_entropy.indexed_dot import _indexed_neg_dot_forward_kernel, indexed_neg_dot_forward_kernel

from harness import Backward, Case, Tolerance, inputs

V = 384


def launch(e: torch.Tensor, c: torch.Tensor, targets: torch.Tensor):
    """LinearCrossEntropyFunction.forward's kernels, reduction "none": (nll, lse)."""
    lse = cce_lse_forward_kernel(e, c)
    nll = indexed_neg_dot_forward_kernel(e, c, targets, out_dtype=lse.dtype).add_(lse)
    return nll, lse


def backward(grad, e, c, lse, targets):
    """The library's backward launcher, given lse: (de, dc)."""
    return cce_backward_kernel(grad, e, c, lse, None, None, None, targets=targets)


def shipped(e: torch.Tensor, c: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return linear_cross_entropy(e, c, targets, reduction="none", filter_eps=None)


def make_inputs(shape, dtype, device, generator):
    tokens, dim = shape
    e = torch.randn((tokens, dim), generator=generator) / dim**0.25
    c = torch.randn((V, dim), generator=generator) / dim**0.25
    targets = torch.randint(0, V, (tokens,), generator=generator)
    return e.to(device=device, dtype=dtype), c.to(device=device, dtype=dtype), targets.to(device)


def reference(e, c, targets):
    """What the launcher returns: each token's loss, and the log-sum-exp over the vocabulary."""
    logits = e.float() @ c.float().T
    lse = torch.logsumexp(logits, dim=-1)
    return lse - logits.gather(1, targets[:, None]).squeeze(1), lse


CASE = Case(
    name="cce_linear_cross_entropy",
    kernels=(_cce_lse_forward_kernel, _indexed_neg_dot_forward_kernel),
    launch=launch,
    returns=("nll", "lse"),
    outputs=("nll",),
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(300, 128, min_size=(1, 16)),  # (tokens, embedding dim)
    example_shape=(40, 64),
    dtypes=(torch.float16, torch.bfloat16),  # the backward refuses float32 embeddings
    unbatched=frozenset({"c"}),
    backward=Backward(backward, kernels=(_cce_backward_kernel,), takes=("grad", "e", "c", "lse", "targets"), gives=("e", "c")),
    tolerances={torch.float16: Tolerance(atol=2e-2, rtol=2e-3), torch.bfloat16: Tolerance(atol=5e-2, rtol=1e-2)},
    shipped=shipped,
    tags=frozenset({"cut_cross_entropy", "library", "reduction", "loss", "training"}),
    description="Cut Cross-Entropy's linear cross-entropy: lse and target-logit kernels returning (nll, lse); backward: the "
                "library's cce_backward_kernel given lse; shipped: linear_cross_entropy (LinearCrossEntropyFunction)",
)

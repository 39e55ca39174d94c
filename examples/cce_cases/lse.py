"""Cut Cross-Entropy's log-sum-exp over the classifier (cut_cross_entropy.cce_lse_forward.cce_lse_forward_kernel):
lse[b] = logsumexp_v(e[b] . c[v]), the loss's normalizer, computed in blocks without materializing the logits.

The library's launcher is used as it ships: annotated, with trailing parameters left at their defaults (valids,
softcap, return_logit_avg), so the case gives the schema without them. It allocates lse (float32, filled with
-inf) and a lock per 128 rows, and launches _cce_lse_forward_kernel: @triton.heuristics of one config (the library's
default; CCE_AUTOTUNE=1 at import makes it an autotuner of 32 configs keyed on V, D and the batch's bin, pruned to 10
by a performance model), which combines blocks of the vocabulary with atomics under a lock.
"""

import torch
from cut_cross_entropy.cce_lse_forward import _cce_lse_forward_kernel, cce_lse_forward_kernel

from harness import Case, Tolerance, inputs

V = 384  # the vocabulary: the classifier's rows, several of the kernel's vocabulary blocks


def make_inputs(shape, dtype, device, generator):
    tokens, dim = shape
    e = torch.randn((tokens, dim), generator=generator) / dim**0.25
    c = torch.randn((V, dim), generator=generator) / dim**0.25
    return e.to(device=device, dtype=dtype), c.to(device=device, dtype=dtype)


def reference(e, c):
    return torch.logsumexp(e.float() @ c.float().T, dim=-1)


CASE = Case(
    name="cce_lse",
    kernels=(_cce_lse_forward_kernel,),
    launch=cce_lse_forward_kernel,
    schema="(Tensor e, Tensor c) -> Tensor",
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(300, 128, min_size=(1, 16)),  # (tokens, embedding dim)
    example_shape=(40, 64),
    dtypes=(torch.float16, torch.bfloat16),  # the library's dtypes (its backward refuses float32 embeddings)
    unbatched=frozenset({"c"}),
    tolerances={torch.float16: Tolerance(atol=2e-2, rtol=2e-3), torch.bfloat16: Tolerance(atol=5e-2, rtol=1e-2)},
    tags=frozenset({"cut_cross_entropy", "library", "reduction", "atomics"}),
    description="Cut Cross-Entropy cce_lse_forward_kernel as it ships (schema without its defaulted parameters): "
                "blocked log-sum-exp over the classifier, atomics under a lock; no backward of its own",
)

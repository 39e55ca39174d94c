"""A planted case whose reference is a triton_op that hides its kernel from torch's kernel discovery (the warm-cache
row's stale-kernel check). A file of its own: the triton_op decorator imports Dynamo and Inductor as the module is
imported (3.4 s of CPU on the CI machine), which every process that imports tests/harness/planted.py would pay."""

import functools

import torch
import triton

from tests.harness.planted import _launch_with, _planted, copy_kernel


# A triton_op written so that torch's kernel discovery cannot see its kernel: reached through an object built
# outside the op's body. Its reference calls it, so the warm-cache row's control runs it compiled.
# Wrapped at its first call, not at import: torch 2.11 and older refuse to wrap_triton an interpreted kernel
# (TRITON_INTERPRET=1), and an import error here would lose this case's module.
class _Hidden:
    @functools.cached_property
    def kernel(self):
        return torch.library.wrap_triton(copy_kernel)


_hidden = _Hidden()


@torch.library.triton_op("tcm_planted::hidden_copy", mutates_args=())
def _hidden_copy(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _hidden.kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


CASES = [_planted("planted_hidden_from_discovery", copy_kernel, _launch_with("copy_kernel"), reference=_hidden_copy)]

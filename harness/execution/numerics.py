"""Is an artifact's answer the reference's? Outputs, and every tensor input after the call, compared with
the case's reference: integers and bools exactly, floating tensors within the case's tolerance for the
dtype, and where that fails, as PyTorch's own accuracy check judges compiled code (torch._dynamo.utils.same
with fp64_ref, used by benchmarks/dynamo's check_accuracy): the answer passes when its error against a
float64 run of the reference is within a small multiple of the error the eager low-precision reference has
itself. A different summation order (atomics, split reductions, scatter-add gradients) is then not a wrong
answer, while a real mistake still is. A difference raises Mismatch with what differs and by how much.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from harness.authoring.case import Case
from harness.model.errors import Mismatch

# The reference run in float64 (outputs, then inputs after the call, as `expected`), or None where it cannot run.
Float64Reference = Callable[[], "list[Any] | None"]


def flatten(value: Any) -> list[Any]:
    """Outputs as a list: a None result is no output; a None inside a list (a missing gradient) stays."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in (flatten(v) if isinstance(v, (tuple, list)) else [v])]
    return [value]


def rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean(torch.square(a.double() - b.double()))))


def multiplier(dtype: torch.dtype, numel: int) -> float:
    """How much larger than the eager reference's own error an answer's may be (as torch._dynamo.utils.same):
    3 for half precision and for small tensors, where noise dominates the metric; 2 otherwise."""
    return 3.0 if dtype in (torch.float16, torch.bfloat16) or numel < 1000 else 2.0


def assert_close(case: Case, dtype: torch.dtype, expected: list[Any], actual: list[Any], names: list[str],
                 float64: Float64Reference | None = None) -> None:
    """Outputs, then every tensor input after the call (a mutation must happen, and only where declared)."""
    if len(expected) != len(actual):
        raise Mismatch("the number of outputs", math.inf, f"{len(actual)} vs {len(expected)}")
    tol = case.tolerance(dtype)
    exact: list[Any] | None = None  # the float64 run, made once, when a floating comparison first fails
    for n, (name, e, a) in enumerate(zip(names, expected, actual)):
        if isinstance(e, torch.Tensor) and a is None:
            raise Mismatch(name, math.inf, "it is missing (None) where the reference has one: cut off from the autograd graph")
        if isinstance(e, torch.Tensor) and e.dim() == 0 and not e.is_floating_point() and isinstance(a, torch.Tensor):
            if int(a) != int(e):
                raise Mismatch(name, abs(int(a) - int(e)), f"{int(a)} where the reference has {int(e)}")
            continue
        if not isinstance(e, torch.Tensor):
            if e != a:
                raise Mismatch(name, math.inf, f"value {a!r} vs {e!r}")
            continue
        if not isinstance(a, torch.Tensor) or a.shape != e.shape or a.dtype != e.dtype:
            got = f"{tuple(a.shape)} {a.dtype}" if isinstance(a, torch.Tensor) else type(a).__name__
            raise Mismatch(name, math.inf, f"shape/dtype {got} vs {tuple(e.shape)} {e.dtype}")
        a, e = a.cpu(), e.cpu()
        if not (a.is_floating_point() or a.is_complex()):  # integers and bools: exactly
            differ = a != e
            if bool(differ.any()):
                max_error = float((a.double() - e.double()).abs().max())
                raise Mismatch(name, max_error, f"{int(differ.sum())} of {e.numel()} elements")
            continue
        close = torch.isclose(a, e, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
        if bool(close.all()):
            continue
        diff = (a.double() - e.double()).abs()
        max_error = float(diff.nan_to_num(nan=math.inf).max())
        unwritten = int((a.isnan() & ~e.isnan()).sum())
        note = f", {unwritten} NaN where the reference has a number (never written?)" if unwritten else ""
        mismatched = f"{int((~close).sum())} of {e.numel()} elements{note}"
        if float64 is not None and not unwritten:
            exact = float64() if exact is None else exact
            truth = exact[n] if exact is not None and n < len(exact) else None
            if isinstance(truth, torch.Tensor) and truth.shape == e.shape:
                truth = truth.cpu()
                ref_error, res_error = rmse(truth, e), rmse(truth, a)
                allowed = multiplier(a.dtype, e.numel()) * ref_error + tol.atol / 10
                if res_error <= allowed:
                    continue  # as close to the exact answer as the eager reference is: another order of operations
                mismatched += (f"; RMSE against a float64 reference {res_error:.3g}, the eager reference's own "
                               f"{ref_error:.3g} (allowed {allowed:.3g})")
        raise Mismatch(name, max_error, mismatched)

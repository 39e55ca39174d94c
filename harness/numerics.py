"""Is an artifact's answer the reference's? Outputs, and every tensor input after the call, compared
within the case's tolerance for the dtype; a difference raises Mismatch with what differs and by how much."""

from __future__ import annotations

import math
from typing import Any

import torch

from harness.case import Case
from harness.errors import Mismatch


def flatten(value: Any) -> list[Any]:
    """Outputs as a list: a None result is no output; a None inside a list (a missing gradient) stays."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in (flatten(v) if isinstance(v, (tuple, list)) else [v])]
    return [value]


def assert_close(case: Case, dtype: torch.dtype, expected: list[Any], actual: list[Any], names: list[str]) -> None:
    """Outputs, then every tensor input after the call (a mutation must happen, and only where declared)."""
    if len(expected) != len(actual):
        raise Mismatch("the number of outputs", math.inf, f"{len(actual)} vs {len(expected)}")
    tol = case.tolerance(dtype)
    for name, e, a in zip(names, expected, actual):
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
        close = torch.isclose(a, e, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
        if not bool(close.all()):
            diff = (a.double() - e.double()).abs()
            max_error = float(diff.nan_to_num(nan=math.inf).max())
            unwritten = int((a.isnan() & ~e.isnan()).sum()) if a.is_floating_point() else 0
            note = f", {unwritten} NaN where the reference has a number (never written?)" if unwritten else ""
            raise Mismatch(name, max_error, f"{int((~close).sum())} of {e.numel()} elements{note}")

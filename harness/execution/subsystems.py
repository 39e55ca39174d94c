"""Subsystem rows: does a style compose with opcheck, FlopCounterMode, a CPU fallback, a tensor subclass?

Each builds a (program, reference) pair whose results the cell compares like any other path's; where each
row applies is in its entry in harness.model.rows.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.testing._internal.two_tensor import TwoTensor
from torch.utils.flop_counter import FlopCounterMode

from harness.authoring.case import Case
from harness.execution.wrapping import build as build_wrapping
from harness.execution.wrapping import operator, shipped_operator
from harness.model.columns import Wrapping
from harness.model.errors import HarnessError, first_line
from harness.model.rows import Row


class OpcheckFailed(HarnessError, AssertionError):
    """opcheck's tests failed for the operator: a finding about the style, recorded as its error type."""


def _flop_count(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*inputs)
    return int(counter.get_total_flops())


def _second_half(x: torch.Tensor) -> torch.Tensor:
    """The TwoTensor's .b: half of a floating tensor, so .a and .b differ; an integer or bool tensor (an index,
    a mask) as it is, since halving would change its dtype and its meaning. With .a's strides and storage offset,
    which TwoTensor asks of both (x * 0.5 of a view with gaps between its rows is contiguous, and starts at 0)."""
    half = x * 0.5 if x.is_floating_point() else x
    extent = x.storage_offset() + (1 + sum((size - 1) * stride for size, stride in zip(x.shape, x.stride())) if x.numel() else 0)
    storage = torch.empty(extent, dtype=half.dtype, device=x.device)
    return storage.as_strided(x.shape, x.stride(), x.storage_offset()).copy_(half)


def _two_tensors(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(TwoTensor(x, _second_half(x)) if isinstance(x, torch.Tensor) else x for x in inputs)


def _halves(inputs: tuple[Any, ...], part: str) -> tuple[Any, ...]:
    return tuple((x if part == "a" else _second_half(x)) if isinstance(x, torch.Tensor) else x for x in inputs)


def programs(row: Row, case: Case, wrapping: Wrapping) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(program, reference) for a subsystem row."""
    if row is Row.OPCHECK:
        op = shipped_operator(case) if wrapping is Wrapping.SHIPPED else operator(case, wrapping)

        def opcheck(*inputs: Any) -> list[Any]:
            report = torch.library.opcheck(op, inputs, raise_exception=False)
            failed = {test: result for test, result in report.items() if result != "SUCCESS"}
            if failed:
                test, error = next(iter(failed.items()))
                message = first_line(error) if isinstance(error, BaseException) else str(error)
                raise OpcheckFailed(f"{len(failed)} of {len(report)} opcheck tests fail; {test}: {message}")
            return []

        return opcheck, lambda *inputs: []

    if row is Row.FLOP_COUNTER:
        fn = build_wrapping(case, wrapping)
        formula = case.flops
        assert formula is not None

        def expected(*inputs: Any) -> list[Any]:
            # Where PyTorch can count the reference itself (a matmul, say), that count is the truth the
            # declared formula must match; otherwise the formula is what the counter should report.
            counted = _flop_count(case.reference, inputs)
            shapes = [tuple(x.shape) for x in inputs if isinstance(x, torch.Tensor)]
            return [torch.tensor(counted or formula(*shapes))]

        return (lambda *inputs: [torch.tensor(_flop_count(fn, inputs))]), expected

    if row is Row.CPU_FALLBACK:
        return build_wrapping(case, wrapping, cpu_fallback=True), case.reference_outputs

    if row is Row.TENSOR_SUBCLASS:
        fn = build_wrapping(case, wrapping)

        def on_two_tensors(*inputs: Any) -> list[Any]:
            out = fn(*_two_tensors(inputs))
            if out is None and case.mutates:  # an in-place case: its inputs are compared after the call
                return []
            outs = list(out) if isinstance(out, (tuple, list)) else [out]  # several outputs: each a TwoTensor
            for o in outs:
                if not isinstance(o, TwoTensor):
                    raise TypeError(f"the result is a {type(o).__name__}, not a TwoTensor")
            return [o.a for o in outs] + [o.b for o in outs]

        def reference(*inputs: Any) -> list[Any]:
            results = []
            for part in ("a", "b"):
                result = case.reference_outputs(*_halves(inputs, part))
                results += list(result) if isinstance(result, (tuple, list)) else [result]
            return [r for r in results if r is not None]

        return on_two_tensors, reference

    raise ValueError(f"{row} is not a subsystem row")

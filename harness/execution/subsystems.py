"""Subsystem rows: does a style compose with opcheck, FlopCounterMode, a CPU fallback, a tensor subclass?

Each builds a (program, reference) pair whose results the cell compares like any other path's, from the row's path
(harness.execution.paths.subsystems, which the cell's reproducer prints); where each row applies is in its entry in
harness.model.rows.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.authoring.case import Case
from harness.execution.paths import subsystems as path
from harness.execution.wrapping import build as build_wrapping
from harness.execution.wrapping import operator, shipped_operator
from harness.model.columns import Wrapping
from harness.model.rows import Row


def programs(row: Row, case: Case, wrapping: Wrapping) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(program, reference) for a subsystem row."""
    if row is Row.OPCHECK:
        op = shipped_operator(case) if wrapping is Wrapping.SHIPPED else operator(case, wrapping)
        return path.opchecked(op), lambda *inputs: []
    if row is Row.FLOP_COUNTER:
        assert case.flops is not None
        return path.flops_counted(build_wrapping(case, wrapping)), path.flops_expected(case.reference, case.flops)
    if row is Row.CPU_FALLBACK:
        return build_wrapping(case, wrapping, cpu_fallback=True), case.reference_outputs
    if row is Row.TENSOR_SUBCLASS:
        return path.on_two_tensors(build_wrapping(case, wrapping), case.mutates), path.on_halves(case.reference_outputs)
    raise ValueError(f"{row} is not a subsystem row")

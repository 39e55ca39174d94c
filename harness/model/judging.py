"""Judging cells as the charts do. The environment blamed where the control fails too, the harness where the control
is its error, a cell's short label, and a style's verdict on a row (Yes, Partial, No) from the cells it counts."""

from __future__ import annotations

import dataclasses
import enum

from harness.model import known_issues
from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.outcome import CellResult, Fault, InGraph, Outcome, Stage
from harness.model.results import Results
from harness.model.rows import Row

FAILED = (Outcome.WRONG, Outcome.FAIL, Outcome.CRASH, Outcome.TIMEOUT)


STAGE_ORDER = list(Stage)


def blame_environment(cells: list[CellResult]) -> list[CellResult]:
    """The cells with `blamed_on` set anew (the given ones are not changed). A cell that fails where its
    case's plain PyTorch control also fails, at the same stage or a later one, is the environment's fault.
    A cell that fails earlier than the control did (at export, say, when the control got as far as
    loading the package) is still the wrapping's own failure."""
    by_cell = {c.cell: c for c in cells}

    def blamed_on(cell: CellResult) -> str | None:
        control = _failed_no_later(cell, by_cell)
        return control.cell.id if control is not None and control.outcome in FAILED else None

    return [c if c.blamed_on == (blame := blamed_on(c)) else dataclasses.replace(c, blamed_on=blame) for c in cells]


def blame_harness(cells: list[CellResult]) -> list[CellResult]:
    """The cells, each failing one whose control is the harness's error made the harness's error too (the given ones
    are not changed). The cells are those blame_environment would blame had the control failed there: same case, same
    row, failing at the control's stage or a later one. The control was not measured past its stage, so whether the path
    works here from there on is unknown: such a cell's failure is neither the style's finding nor the environment's.
    Its message names the control and what broke; its detail keeps its own failure."""
    by_cell = {c.cell: c for c in cells}

    def judged(cell: CellResult) -> CellResult:
        control = _failed_no_later(cell, by_cell)
        if control is None or control.outcome is not Outcome.ERROR or (control.fault or Fault.HARNESS) is not Fault.HARNESS:
            return cell
        stage = control.stage.value if control.stage else "?"
        message = (f"the control {control.cell.id} failed by the harness's own fault at {stage}, so this cell's failure there "
                   f"or later is not measured: {control.error_type or 'error'}: {control.message or ''}")
        own = (f"This cell's own failure: {cell.outcome.value} @{cell.stage.value if cell.stage else '?'}: "
               f"{cell.error_type or ''}{': ' if cell.error_type else ''}{cell.detail or cell.message or ''}")
        return dataclasses.replace(cell, outcome=Outcome.ERROR, fault=Fault.HARNESS, message=message,
                                   detail=f"{message}\n\n{own}"[:4000], blamed_on=None)

    return [judged(c) for c in cells]


def _failed_no_later(cell: CellResult, by_cell: dict[Cell, CellResult]) -> CellResult | None:
    """The control of a failing style cell where the control did not pass, at the cell's stage or an earlier one (it
    failed, or broke as an error); else None (a passing cell, a control, a control that passed or did not run)."""
    if cell.wrapping is Wrapping.CONTROL or cell.outcome not in FAILED:
        return None
    control = by_cell.get(cell.cell.control())
    if control is None or control.outcome not in (*FAILED, Outcome.ERROR):
        return None
    if STAGE_ORDER.index(cell.stage or Stage.RUN) >= STAGE_ORDER.index(control.stage or Stage.SETUP):
        return control
    return None


def judged(results: Results) -> Results:
    """A copy of the results with the failures under a control that is the harness's error made the harness's error,
    the environment's failures blamed on it, and every other failure matched to its known issue, with the entries this
    harness holds (harness.model.known_issues): what the reports show."""
    interpreter = results.fingerprint.interpreter
    cells = []
    for cell in blame_environment(blame_harness(results.cells)):
        entry = known_issues.match(cell, interpreter)
        key = entry.key if entry else None
        cells.append(cell if cell.known_issue == key else dataclasses.replace(cell, known_issue=key))
    return dataclasses.replace(results, cells=cells)


def outcome_label(cell: CellResult) -> str:
    """A short outcome for a table cell; a cell whose outcome varies between runs says so, and one whose outcome in a shared
    process differed from its outcome alone (charted as it ran alone)."""
    differed = cell.confirmation is not None and cell.confirmation.agreed is False
    return _outcome_words(cell) + (" (flaky)" if cell.flaky else "") + (" (alone; differed shared)" if differed else "")


def _outcome_words(cell: CellResult) -> str:
    if cell.blamed_on:
        return f"env ({cell.outcome.value})"
    if cell.outcome is Outcome.PASS:
        text = "pass"
        if cell.graph_breaks:
            text += f", {cell.graph_breaks} graph breaks"
        if any("mutated" in w for w in cell.warnings):
            text += ", assumes every input mutated"
        if cell.degradations:
            text += ", degraded"
        return text
    if cell.outcome is Outcome.WRONG:
        if cell.mismatched and "missing (None)" in cell.mismatched:
            return "WRONG (gradient lost)"
        return f"WRONG (max err {cell.max_error:.2g})" if cell.max_error is not None else "WRONG"
    if cell.outcome is Outcome.CRASH:
        return f"CRASH {cell.signal or ''} @{cell.stage.value if cell.stage else '?'}".replace("  ", " ")
    if cell.outcome is Outcome.ERROR:
        return f"{(cell.fault or Fault.HARNESS).value} error @{cell.stage.value if cell.stage else '?'}"
    if cell.outcome in (Outcome.FAIL, Outcome.TIMEOUT):
        return f"{cell.outcome.value} @{cell.stage.value if cell.stage else '?'}"
    return cell.outcome.value


class Verdict(str, enum.Enum):
    """How a style fares on a row, in the charts' words."""

    YES = "Yes"  # every case counted passed
    PARTIAL = "Partial"  # some did
    NO = "No"  # none did
    NONE = "n/a"  # no case counted


def verdict(passed: int, total: int) -> Verdict:
    if total == 0:
        return Verdict.NONE
    if passed == total:
        return Verdict.YES
    return Verdict.NO if passed == 0 else Verdict.PARTIAL


def counted_cells(cells: list[CellResult]) -> list[CellResult]:
    """The cells a verdict counts: not skipped, not an error of the case or the harness (no finding about the
    path), not a failure the environment is blamed for (the control fails there too)."""
    return [c for c in cells if not c.blamed_on and c.outcome not in (Outcome.SKIPPED, Outcome.ERROR)]


def pass_counts(cells: list[CellResult], traces_into: bool = False) -> tuple[int, int]:
    """(passed, counted) of a verdict: the cases that passed of those counted, or with `traces_into` the
    compiled graphs that traced into the kernel of those read."""
    if traces_into:
        judged = [c for c in cells if c.kernel_in_graph in (InGraph.TRACED, InGraph.OPAQUE)]
        return sum(c.kernel_in_graph is InGraph.TRACED for c in judged), len(judged)
    kept = counted_cells(cells)
    return sum(c.outcome is Outcome.PASS for c in kept), len(kept)


def by_row_and_style(cells: list[CellResult]) -> dict[Row, dict[Wrapping, list[CellResult]]]:
    """The cells by row, then by wrapping style: a chart's entries."""
    grouped: dict[Row, dict[Wrapping, list[CellResult]]] = {}
    for cell in cells:
        grouped.setdefault(cell.row, {}).setdefault(cell.wrapping, []).append(cell)
    return grouped

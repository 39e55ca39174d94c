"""The reports, written together: SUPPORT.md (harness.reporting.support), MATRIX.md (every cell) and results.json."""

from __future__ import annotations

import os
from collections import defaultdict

from tabulate import tabulate

from harness.model import results as results_file
from harness.model.columns import Wrapping, present
from harness.model.fingerprint import Fingerprint
from harness.model.judging import judged, outcome_label
from harness.model.outcome import CellResult, Outcome
from harness.model.results import Results
from harness.model.rows import Row
from harness.reporting import picture as matrix_picture
from harness.reporting import why
from harness.reporting.figures import figures, prebuilt_text, timed_cells, timeline_text
from harness.reporting.header import environment_lines
from harness.reporting.markdown import cell_text
from harness.reporting.support import speedup, support_chart


def timing_lines(results: Results) -> list[str]:
    """Where the time went, and what the harness itself cost per cell."""
    timed = timed_cells(results)
    if not timed:
        return []
    f = figures(results, results.wall_time_s or 0.0)
    t = [c.timings for c in timed]
    lines = [
        f"- {f.cells} cells on {f.workers} workers in {f.wall_s:.0f} s; their work {f.work_s:.0f} s in all "
        f"(setup {sum(x.setup for x in t):.0f} s, compile/export/AOT compile {sum(x.compile for x in t):.0f} s, "
        f"run {sum(x.run for x in t):.0f} s), longest cell {f.longest_cell_s:.1f} s; efficiency {f.efficiency:.2f} "
        "(max(longest cell, work / workers) / wall time)",
        f"- harness overhead per cell (wall minus work, runner start included): median {f.overhead_median_s:.2f} s, "
        f"max {f.overhead_worst_s:.2f} s",
    ]
    if f.process_starts:
        lines.append(
            f"- runner processes started: {f.process_starts} (first cell of a worker, or after a crash, timeout or "
            f"poisoned context), median start {f.process_start_median_s:.2f} s"
        )
    if (built := prebuilt_text(f.prebuilt)) is not None:
        lines.append(f"- built for the cells as the run started, in no cell's work: {built}")
    if (timeline := timeline_text(f.timeline)) is not None:
        lines.append(f"- the run's start and end, seconds from its start: {timeline}")
    return lines


def matrix(results: Results) -> str:
    results = judged(results)
    by_row: dict[Row, list[CellResult]] = defaultdict(list)
    for cell in results.cells:
        by_row[cell.row].append(cell)
    by_cell = results.by_cell()
    out = ["# Matrix: every cell", "", *environment_lines(results), ""]
    out.append(
        "Outcomes: `pass`; `WRONG` (ran, numbers differ from the reference); `fail @stage` (an exception); "
        "`CRASH` (the process died on a signal); `timeout @stage`; `skipped`; `env` (the control fails on "
        "this path too); `error` (the case or harness broke; a cell failing where its control is the harness's error "
        "is the harness's error too, never `env`). Stages: setup, wrap, compile, export, "
        "aot_compile, aot_load, run. *Why*: the known upstream issue or documented limit a failing cell matches "
        f"(link, status, workaround; SUPPORT.md groups them), or *no known issue*. {why.REPRO_HINT}."
    )
    timing = timing_lines(results)
    if timing:
        out += ["", "Timing:", "", *timing]
    for row in Row:
        cells = by_row.get(row)
        if not cells:
            continue
        out += ["", f'<a id="{row.value}"></a>', f"## {row.spec.title}", ""]
        grid: dict[str, dict[Wrapping, str]] = defaultdict(dict)
        for c in cells:
            ratio = speedup(c, by_cell)
            grid[c.case][c.wrapping] = outcome_label(c) + (f", {ratio:.2f}x eager" if ratio is not None else "")
        columns = present(Wrapping, results.cells)
        rows = [[case, *[grid[case].get(w, "") for w in columns]] for case in sorted(grid)]
        out.append(tabulate(rows, headers=["case", *[w.value for w in columns]], tablefmt="github"))
        untested = [c for c in cells if c.outcome is Outcome.SKIPPED]
        details = [c for c in sorted(cells, key=lambda c: c.cell.id) if c.outcome is not Outcome.SKIPPED
                   and (c.outcome is not Outcome.PASS or c.graph_breaks or c.warnings or c.flaky or c.degradations)]
        if details:
            out += ["", tabulate([_detail(c, results.fingerprint) for c in details],
                                 headers=["cell", "outcome", "error (first line)", "smallest failing example", "why"], tablefmt="github")]
        if untested:
            out += ["", tabulate(_untested(untested), headers=["not tested here", "cells", "why"], tablefmt="github")]
    out.append("")
    return "\n".join(out)


def _untested(cells: list[CellResult]) -> list[list[str]]:
    """A row's cells not tested here, a line per reason (most cells first), naming its cells by case and style: on
    Triton's interpreter most of a chart's cells are, and a line each buried the cells that ran."""
    by_reason: dict[str, list[CellResult]] = defaultdict(list)
    for cell in cells:
        by_reason[cell.message or ""].append(cell)
    lines = []
    for reason, same in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0])):
        styles: dict[str, list[str]] = defaultdict(list)
        for cell in sorted(same, key=lambda c: c.cell.id):
            styles[cell.case].append(cell.wrapping.value)
        named = "; ".join(f"`{case}` ({', '.join(wrappings)})" for case, wrappings in styles.items())
        lines.append([f"{len(same)} cell{'s' if len(same) > 1 else ''}", cell_text(named), cell_text(reason)])
    return lines


def _detail(cell: CellResult, fingerprint: Fingerprint) -> list[str]:
    error = cell.message or ""
    if cell.outcome is Outcome.PASS and cell.warnings:
        error = f"warning: {cell.warnings[0]}"
    if cell.outcome is Outcome.PASS and cell.degradations:
        error = "degraded: " + "; ".join(cell.degradations)
    if cell.error_type:
        error = f"{cell.error_type}: {error}"
    if cell.mismatched:
        error += f" ({cell.mismatched})"
    if cell.blamed_on:
        error = f"control {cell.blamed_on} fails too. {error}"
    if cell.flaky:
        error = f"FLAKY, {cell.flaky}. This run: {error}"
    return [f"`{cell.cell.id}`", outcome_label(cell), cell_text(error), cell_text(cell.example or ""),
            cell_text(why.cell_reason(cell, fingerprint))]


def check_writable(directory: str) -> None:
    """OutputNotWritten, before a run writes there, where `directory` is not a folder or one of the reports' files in it
    is not a regular file (a device, a pipe, a link): write() would refuse it only once the cells had run."""
    results_file.refuse_unless_folder(directory)
    results_file.refuse_unless_ours(*(os.path.join(directory, name) for name in REPORT_FILES))


# Every file write() writes or removes, in the order it replaces them.
REPORT_FILES = ("results.json", "MATRIX.md", matrix_picture.FILENAME, "SUPPORT.md")


def write(results: Results, directory: str) -> list[str]:
    """Write the reports (the given results are not changed): results.json, MATRIX.md, SUPPORT.md and, where
    matplotlib can be imported, the matrix's picture that SUPPORT.md shows. They replace the old reports as a set
    (harness.model.results.write_together): a full disk or a report that may not change leaves every old one as it
    was, and raises OutputNotWritten. Where no picture is drawn, one left by an earlier render is removed: it would
    show other results than the reports beside it. Returns the paths written."""
    results = judged(results)
    try:
        png: bytes | None = matrix_picture.draw(results)
    except matrix_picture.Unavailable:
        png = None
    contents: dict[str, str | bytes] = {"results.json": results_file.dumps(results), "MATRIX.md": matrix(results)}
    if png is not None:
        contents[matrix_picture.FILENAME] = png  # before SUPPORT.md, which shows it
    contents["SUPPORT.md"] = support_chart(results, picture_drawn=png is not None)
    return results_file.write_together(directory, contents, remove=() if png is not None else (matrix_picture.FILENAME,))

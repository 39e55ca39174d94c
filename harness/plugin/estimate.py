"""What a run will do and how long it will take, said at its start; how far it got, said as it goes.

The expectation is the measured mean work of a cell on each row, from committed runs (`MEASURED`, made by
`row_seconds` from the results files it names), divided among the workers. It is an estimate: other cases,
machines and versions take other times, and the run's own figures come from `python -m harness bench`.
This module imports no torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable

from harness.model.outcome import CellResult, Outcome
from harness.model.settings import DEFAULT_PROFILE, PROFILES

# (mode, profile) -> {row: mean seconds of work of a cell that ran}, rounded; `row_seconds` measures them.
# From reports/gpu/results.json (one H200, 16 workers, the four --shard parts of one commit's run),
# reports/cpu/results.json (2 cores, the interpreter) and reports/cpu/full-profile-sample/results.json (2 cores,
# the interpreter, the full profile on 3 cases).
MEASURED: dict[tuple[str, str], dict[str, float]] = {
    ('gpu', 'matrix'): {
        'aoti_cpp_nonstrict': 3.31, 'aoti_cpp_strict': 10.73, 'aoti_fresh_nonstrict': 15.76, 'aoti_nonstrict': 2.18,
        'aoti_strict': 15.69, 'compile_cpp_wrapper': 19.4, 'compile_cudagraphs': 7.22, 'compile_default': 6.7,
        'compile_dynamic': 7.0, 'compile_fullgraph': 7.23, 'compile_max_autotune': 8.81, 'compile_unbacked': 6.95,
        'cpu_fallback': 0.22, 'eager': 8.2, 'export_nonstrict': 2.72, 'export_strict': 4.55, 'flop_counter': 23.04,
        'opcheck': 2.75, 'tensor_subclass': 5.9, 'train_compile_default': 9.32, 'train_compile_fullgraph': 10.03,
        'train_eager': 10.04, 'warm_cache_edit': 15.82,
    },
    ('interpreter', 'quick'): {
        'aoti_cpp_nonstrict': 0.16, 'aoti_cpp_strict': 1.63, 'aoti_fresh_nonstrict': 1.51, 'aoti_nonstrict': 0.02, 'aoti_strict': 3.48,
        'compile_cpp_wrapper': 1.72, 'compile_cudagraphs': 0.0, 'compile_default': 0.25, 'compile_dynamic': 0.34, 'compile_fullgraph': 0.25,
        'compile_max_autotune': 0.16, 'compile_unbacked': 0.44, 'cpu_fallback': 0.03, 'eager': 0.05, 'export_nonstrict': 0.03,
        'export_strict': 0.1, 'flop_counter': 0.08, 'opcheck': 0.1, 'tensor_subclass': 0.07, 'train_compile_default': 0.54,
        'train_compile_fullgraph': 1.26, 'train_eager': 0.23, 'warm_cache_edit': 0.0,
    },
    ('interpreter', 'matrix'): {
        'aoti_cpp_nonstrict': 0.3, 'aoti_cpp_strict': 3.28, 'aoti_fresh_nonstrict': 2.94, 'aoti_nonstrict': 3.83, 'aoti_strict': 12.39,
        'compile_cpp_wrapper': 6.13, 'compile_cudagraphs': 0.0, 'compile_default': 3.09, 'compile_dynamic': 2.57, 'compile_fullgraph': 1.62,
        'compile_max_autotune': 3.14, 'compile_unbacked': 2.43, 'cpu_fallback': 0.6, 'eager': 1.57, 'export_nonstrict': 4.98,
        'export_strict': 5.22, 'flop_counter': 0.6, 'opcheck': 0.8, 'tensor_subclass': 0.92, 'train_compile_default': 5.36,
        'train_compile_fullgraph': 4.43, 'train_eager': 2.96, 'warm_cache_edit': 0.0,
    },
}
# A cell the profile leaves out, or that does not apply, costs its report and little else.
SKIPPED_CELL_S = 0.02
# The run's start: pytest, its workers, and each runner importing torch before the first cell.
START_S = {"gpu": 30.0, "interpreter": 25.0}


def row_seconds(results: Any) -> dict[str, float]:
    """The mean work of a cell that ran (not skipped), by row, from a results file; 0 for a row whose every
    cell was skipped there (CUDA graphs on the interpreter)."""
    by_row: dict[str, list[float]] = {}
    for cell in results.cells:
        times = by_row.setdefault(cell.row.value, [])
        if cell.outcome is not Outcome.SKIPPED and cell.timings.work > 0:
            times.append(cell.timings.work)
    return {row: round(sum(times) / len(times), 2) if times else 0.0 for row, times in sorted(by_row.items())}


@dataclass
class Plan:
    """What the controller knows once the run has collected its cells."""

    cells: list[Any]  # the Cell objects this run will run
    all_cells: int  # how many cells the loaded cases make in all
    cases: dict[str, Any]  # name -> Case, for the tags the profile's limited rows need
    specs: list[str]  # where the cases came from (--cases)
    profile: str
    gpu: str | None  # the CUDA device's name, or None: Triton's CPU interpreter
    workers: int
    report_dir: str
    shard: Any = None  # harness.plugin.shard.Shard: this runner's part of the cells, or None

    @property
    def mode(self) -> str:
        return "gpu" if self.gpu else "interpreter"


def cell_seconds(cell: Any, mode: str, profile: str, cases: dict[str, Any]) -> float | None:
    """About how long one cell works under `profile` on this kind of device (mode "gpu" or "interpreter"):
    its row's measured mean, or the mean of every row where its row was never measured; None when no run of
    that profile on that device was measured."""
    seconds = MEASURED.get((mode, profile))
    if not seconds:
        return None
    chosen = PROFILES[profile]
    case = cases.get(cell.case)
    if cell.row.value in chosen.limited_rows and case is not None and chosen.limited_rows_tag not in case.tags:
        return SKIPPED_CELL_S
    return seconds.get(cell.row.value, sum(seconds.values()) / len(seconds))


def expected_seconds(plan: Plan, profile: str | None = None) -> float | None:
    """About how long the plan's cells take under `profile` (default: the plan's) on its workers; None when
    no run of that profile on this kind of device was measured."""
    each = [cell_seconds(cell, plan.mode, profile or plan.profile, plan.cases) for cell in plan.cells]
    if None in each:
        return None
    return run_seconds(each, plan.workers, plan.mode)  # type: ignore[arg-type]


def run_seconds(cells: list[float], workers: int, mode: str) -> float:
    """A run's wall time from its cells' seconds, shared among its workers (at most one per core)."""
    parallel = max(1, min(workers, os.cpu_count() or 1))
    # No run ends before its longest cell (a fresh-process AOTInductor cell: two minutes on a GPU).
    return START_S[mode] + max(sum(cells) / parallel, max(cells, default=0.0))


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def announce(plan: Plan) -> str:
    """The run's first lines: what it will run, how, where the reports go, and how long it should take."""
    where = f"on {plan.gpu}" if plan.gpu else "on the CPU through Triton's interpreter (no CUDA device)"
    part = "" if len(plan.cells) == plan.all_cells else f" (of the {plan.all_cells} its cases make)"
    if plan.shard is not None:
        part = f" (shard {plan.shard}: this runner's part of the {plan.all_cells} its cases make)"
    rows, styles = len({c.row for c in plan.cells}), len({c.wrapping for c in plan.cells})
    lines = [f"{len(plan.cells)} cells{part}: {_count(len(plan.cases), 'case')} from {', '.join(plan.specs)} x "
             f"{_count(styles, 'wrapping style')} x {_count(rows, 'row')}, {where}, {_count(plan.workers, 'worker')}; "
             f"reports to {plan.report_dir}"]
    expected = expected_seconds(plan)
    lines.append(f"profile {plan.profile}: {PROFILES[plan.profile].summary}; "
                 + (f"expect about {_minutes(expected)}" if expected else "no timing of this profile here to estimate from"))
    if plan.profile != DEFAULT_PROFILE:
        full = expected_seconds(plan, DEFAULT_PROFILE)
        lines.append(f"the full profile (--matrix-profile={DEFAULT_PROFILE}: {PROFILES[DEFAULT_PROFILE].summary}) "
                     + (f"takes about {_minutes(full)} here" if full else "has no timing here to estimate from")
                     + ("; its answers are the chart's, measured on a GPU" if not plan.gpu else ""))
    return "\n".join(lines)


def progress(results: Iterable[CellResult], total: int, elapsed_s: float) -> str:
    """How far the run got: cells done, and how many passed and failed so far."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome.value] = counts.get(result.outcome.value, 0) + 1
    done = sum(counts.values())
    order = [o.value for o in Outcome]
    summary = ", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=order.index))
    left = f"; about {_minutes(elapsed_s / done * (total - done))} left" if 0 < done < total else ""
    return f"{done}/{total} cells in {_minutes(elapsed_s)} ({summary}){left}"

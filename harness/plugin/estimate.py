"""What a run will do and how long it will take, said at its start; how far it got, said as it goes.

The expectation is the measured mean work of a cell on each row, from committed runs (`MEASURED`, made by
`row_seconds` from the results files it names), divided among the workers, plus what a run spends besides
its cells' work (`START_S`, `CELL_S`). It is an estimate: other cases, machines and versions take other
times. As the run goes, the cells done and those still running correct it, kind of row by kind of row, and the
cells left are handed out to the workers as the run hands them out (`remaining_seconds`). The run's own figures come from
`python -m harness bench`. This module imports no torch.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass
from typing import Any, Collection, Iterable

from harness.authoring import registry
from harness.model.columns import Wrapping
from harness.model.outcome import CellResult, Outcome
from harness.model.rows import Examples
from harness.model.settings import DEFAULT_PROFILE, PROFILES

# (mode, profile) -> {row: mean seconds of work of a cell of that row the profile checks}, rounded;
# `row_seconds` measures them. From reports/gpu/results.json (the chart of one H200 in two --shard halves of 20 workers
# each, with the runs that added the production rows and cases on one H100 and one H200), reports/cpu/results.json (2
# cores, the interpreter) and
# reports/evidence/cpu/full-profile-sample/results.json (2 cores, the interpreter, the full profile on 3 cases).
MEASURED: dict[tuple[str, str], dict[str, float]] = {
    ('gpu', 'matrix'): {
        'aoti_cpp_nonstrict': 10.08, 'aoti_cpp_strict': 36.86, 'aoti_fresh_nonstrict': 6.44, 'aoti_nonstrict': 4.75, 'aoti_strict':
        11.35, 'cache_artifacts_fresh': 17.88, 'compile_cpp_wrapper': 15.07, 'compile_cudagraphs': 5.07, 'compile_default': 4.24,
        'compile_dynamic': 3.87, 'compile_fullgraph': 3.86, 'compile_inference_mode': 4.76, 'compile_max_autotune': 7.12,
        'compile_no_recompile': 3.21, 'compile_unbacked': 3.75, 'cpu_fallback': 0.37, 'eager': 0.54, 'export_load_fresh': 9.27,
        'export_nonstrict': 0.73, 'export_strict': 1.24, 'flop_counter': 0.05, 'opcheck': 0.38, 'precompile_fresh': 14.64,
        'tensor_subclass': 0.62, 'train_compile_default': 3.75, 'train_compile_fullgraph': 4.16, 'train_eager': 0.41,
        'warm_cache_edit': 15.02,
    },
    ('interpreter', 'quick'): {
        'aoti_cpp_nonstrict': 0.16, 'aoti_cpp_strict': 0.28, 'aoti_fresh_nonstrict': 0.08, 'aoti_nonstrict': 0.04, 'aoti_strict':
        4.88, 'cache_artifacts_fresh': 3.68, 'compile_cpp_wrapper': 2.34, 'compile_cudagraphs': 0.0, 'compile_default': 0.19,
        'compile_dynamic': 0.66, 'compile_fullgraph': 0.89, 'compile_inference_mode': 0.24, 'compile_max_autotune': 0.22,
        'compile_no_recompile': 0.13, 'compile_unbacked': 0.17, 'cpu_fallback': 0.05, 'eager': 0.06, 'export_load_fresh': 0.25,
        'export_nonstrict': 0.05, 'export_strict': 0.13, 'flop_counter': 0.0, 'opcheck': 0.06, 'precompile_fresh': 0.9,
        'tensor_subclass': 0.05, 'train_compile_default': 1.86, 'train_compile_fullgraph': 0.27, 'train_eager': 0.06,
        'warm_cache_edit': 0.01,
    },
    ('interpreter', 'matrix'): {
        'aoti_cpp_nonstrict': 0.3, 'aoti_cpp_strict': 3.28, 'aoti_fresh_nonstrict': 2.94, 'aoti_nonstrict': 3.83, 'aoti_strict': 12.39,
        'compile_cpp_wrapper': 6.13, 'compile_cudagraphs': 0.0, 'compile_default': 1.85, 'compile_dynamic': 2.36,
        'compile_fullgraph': 1.62, 'compile_max_autotune': 3.14, 'compile_unbacked': 2.43, 'cpu_fallback': 0.6, 'eager': 1.57,
        'export_nonstrict': 4.98, 'export_strict': 5.22, 'flop_counter': 0.32, 'opcheck': 0.32, 'tensor_subclass': 0.92,
        'train_compile_default': 3.94, 'train_compile_fullgraph': 4.43, 'train_eager': 2.96, 'warm_cache_edit': 0.0,
    },
}
# What autotuning adds to a cell of a case whose kernels autotune, on a row whose examples are drawn (each a new size, so
# a new autotuning key): seconds a config an example. The row means above hold the built-in cases' few configs (2-3 a
# kernel); a library's hold 6-42. Measured on one H100 (reports/evidence/gpu/flag-gems/spare-template/outcome-diff):
# FlagGems's layer norm (42 configs over its five kernels, forward and backward) against its hardtanh (none), the same
# styles and rows: 784 s more over 70 drawn cells, 0.013 s for each of a cell's 20 examples and 42 configs. Most of it
# is in the compiled rows (Inductor times a traced kernel's configs again at each recompile) and in training (the
# backward's kernels); eager paid none there, FlagGems's own tuner keeping its choices on disk. On the interpreter
# nothing autotunes.
AUTOTUNE_S = {"gpu": 0.013, "interpreter": 0.0}
# The same where the case's configs are compiled before its cells (harness.execution.compile_ahead): what is left is the
# timing and the specializations the slices did not draw. On one H200 (reports/evidence/gpu/compile-ahead), a drawn cell
# that launches the kernels worked, beyond its row's mean, 0.0019-0.0023 s an example and config for torchao's int8 matmul
# (27 configs; 55 cells, in two runs) and 0.0068 s for FlagGems's layer norm (42; 56 cells).
AUTOTUNE_AHEAD_S = {"gpu": 0.005, "interpreter": 0.0}
# A cell the profile leaves out costs nothing but its report, whose time is CELL_S: 0.0003 s of work on
# average in reports/cpu/results.json (483 such cells).
SKIPPED_CELL_S = 0.0
# What a run spends besides its cells' work, measured in the committed runs from each cell's `finished` and
# `wall` against the run's wall_time_s. START_S: from the run's start to its first cell (pytest, its workers,
# each runner importing torch) and from its last cell to its end (the reports): on the interpreter 7.2 s +
# 0.8 s (reports/cpu) and 7.2 s + 5.8 s (reports/evidence/cpu/full-profile-sample); on the GPU 11-16 s + 2-4 s
# (reports/evidence/gpu/full-run's four shards). CELL_S: a worker's time between and around its cells' work (the
# request and answer, pytest's report), a cell: 0.005 s on the interpreter's quick profile (0.05 s on the full
# profile's 345 cells), 0.38-0.42 s on the GPU (16 workers and their runners on 16 cores).
START_S = {"gpu": 17.0, "interpreter": 10.0}
CELL_S = {"gpu": 0.4, "interpreter": 0.005}
# The cells done correct the estimate once they hold this share of the work it gives their kind (see
# `remaining_seconds`). Earlier, a few cells say more of themselves than of the machine: replayed in the order
# their cells finished, at every twentieth of their wall time, the committed runs (reports/cpu, and with its
# row means doubled and halved as for a machine twice as slow or fast; reports/evidence/gpu/full-run's four shards)
# give remaining times off by up to 14x correcting from 2% of the work, 1.6-2.6x from 5%, 10% or 20% (1.2-1.6x
# on average), and 2.0x and 1.8x on average never correcting where the row means are twice off. Extrapolating
# the elapsed time per cell, as the first lines did, was 5-10x off on average and up to 89x: the costliest
# cells run first. A tenth leaves margin above the noise.
TRUSTED_SHARE = 0.1
# A kind of row's cells done weigh against this many cells at the overall scale (`remaining_seconds`): one cell of a
# kind says little, five say most. Replayed as below on three GPU runs (two built-in cases, the interpreter-probe
# check's 126 cells, Cut Cross-Entropy's 253), 1 to 4 gave the same estimates within a few percent.
PRIOR_CELLS = 2.0
# From the last cell's end to the run's end (the reports): 2-4 s on the GPU, about 1 s on the interpreter's quick profile.
END_S = {"gpu": 3.0, "interpreter": 1.0}


def row_seconds(results: Any, ran_only: bool = False) -> dict[str, float]:
    """The mean work of a cell of each row, from a results file, over the cells of the row that its profile
    checks. Cells skipped for their case's own reasons (no backward, no flop formula, an autotuner the
    interpreter cannot time) count at what they cost, nearly nothing: every run like it skips them too. In
    a row the profile limits, only the cases it checks there count, known by a cell of theirs that ran: the
    others' cells cost SKIPPED_CELL_S in `cell_seconds`, and counting them here would charge the checked
    cases' cells too little. 0 for a row whose every cell was skipped (CUDA graphs on the interpreter).
    With `ran_only`, only the cells that ran count: the cost of a cell the results do not hold (a case added
    since), which nothing says will be skipped (harness.plugin.shard)."""
    limited = set(results.fingerprint.hypothesis.other.get("limited_rows") or ())
    ran = {(c.case, c.row.value) for c in results.cells if c.outcome is not Outcome.SKIPPED}
    by_row: dict[str, list[float]] = {}
    for cell in results.cells:
        times = by_row.setdefault(cell.row.value, [])
        if ran_only and cell.outcome is Outcome.SKIPPED:
            continue
        if cell.row.value not in limited or (cell.case, cell.row.value) in ran:
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
    carried: int = 0  # collected cells carried over from --baseline, not run (not in `cells`)
    carried_from: str = ""  # the run they come from
    cores: int | None = None  # the machine's cores, where not this machine's (a run replayed: `replayed`)
    runner_start: float = 0.0  # what each cell's runner is expected to pay to start, before any has (the controller's)
    runner_start_why: str = ""  # what the cases' import did that keeps runners from being forked after it
    compiled_ahead: frozenset[str] = frozenset()  # the cases whose configs the run compiles before their cells

    @property
    def mode(self) -> str:
        return "gpu" if self.gpu else "interpreter"


def cell_seconds(cell: Any, mode: str, profile: str, cases: dict[str, Any], ahead: Collection[str] = ()) -> float | None:
    """About how long one cell works under `profile` on this kind of device (mode "gpu" or "interpreter"):
    its row's measured mean, or the mean of every row where its row was never measured, and its autotuning (less where
    its case is one of those compiled `ahead`); None when no run of that profile on that device was measured."""
    seconds = MEASURED.get((mode, profile))
    if not seconds:
        return None
    case = cases.get(cell.case)
    if case is not None and PROFILES[profile].leaves_out(cell.row.value, builtin=registry.builtin(case), tags=case.tags):
        return SKIPPED_CELL_S
    return seconds.get(cell.row.value, sum(seconds.values()) / len(seconds)) + _autotuning(cell, case, mode, profile, ahead)


def _autotuning(cell: Any, case: Any, mode: str, profile: str, ahead: Collection[str]) -> float:
    """What the case's autotuners add to the cell beyond its row's mean (AUTOTUNE_S, AUTOTUNE_AHEAD_S where its configs are
    compiled ahead): on a row whose examples are drawn, for each example and config; the control launches no kernel."""
    if case is None or cell.row.spec.examples is not Examples.DRAWN or cell.wrapping is Wrapping.CONTROL:
        return 0.0
    each = AUTOTUNE_AHEAD_S if cell.case in ahead else AUTOTUNE_S
    return each[mode] * PROFILES[profile].max_examples * case.autotune_configs


def expected_seconds(plan: Plan, profile: str | None = None) -> float | None:
    """About how long the plan's cells take under `profile` (default: the plan's) on its workers, from the
    run's start to its end; None when no run of that profile on this kind of device was measured, or when
    there is nothing to run."""
    each = [cell_seconds(cell, plan.mode, profile or plan.profile, plan.cases, plan.compiled_ahead) for cell in plan.cells]
    if not each or None in each:
        return None
    each = [seconds + plan.runner_start if seconds > SKIPPED_CELL_S else seconds for seconds in each]  # type: ignore[operator]
    return START_S[plan.mode] + run_seconds(each, plan.workers, plan.mode, plan.cores)  # type: ignore[arg-type]


def run_seconds(cells: list[float], workers: int, mode: str, cores: int | None = None) -> float:
    """The time cells of these seconds of work take, handed out to the workers (at most one per core: this machine's,
    or `cores`) as the cells left are (`_finish`), each with its report's time: no run ends before its longest cell."""
    return _finish([], cells, _parallel(workers, cores), mode)


def _parallel(workers: int, cores: int | None = None) -> int:
    return max(1, min(workers, cores or os.cpu_count() or 1))


def remaining_seconds(results: Iterable[CellResult], plan: Plan, running: dict[Any, float] | None = None) -> float | None:
    """About how long the plan's cells not yet done take, those `running` (cell: seconds since it began) among them.

    Each cell left is given its row's mean, scaled by what the cells done like it measured: those of its kind of row
    (harness.model.rows.Kind: compiling, exporting, AOTInductor, ...) in cells that autotune or in cells that do not,
    a kind's few cells weighed against PRIOR_CELLS cells at the scale of every cell done; that overall scale is 1 until
    the cells done hold TRUSTED_SHARE of the work. A cell still running past what it was given counts, for its kind,
    as twice its time so far: a library's compiled rows cost it many times their means, and the first word of it is a
    cell of theirs that does not end. It is expected to end as the cells done of its kind that ran longer did, at its
    scale, or where none did, to run as long again (the median of what is left of a run of unknown length). The cells
    left are then handed, costliest first, to the worker free first, after what each worker's running cell has left
    (as harness.plugin.scheduling orders them); the run ends when the last worker does.
    None while the profile was never measured here and the cells done do not yet say how fast this machine is."""
    running = running or {}
    calibrated, given = True, _given(plan, plan.profile)
    if given is None:
        # A profile never measured on this device: the default profile's row means still say which cells
        # cost more than which, and the cells done say how much.
        calibrated, given = False, _given(plan, DEFAULT_PROFILE)
    if given is None:
        return None
    # A cell's pace is its wall time less its runner's start, which every cell left is given as the cells done paid it.
    results = [result for result in results if result.cell in given]
    done = {result.cell: result.timings.wall - result.timings.process_start for result in results}
    # Each worker's first cell pays what its process does once (its first compile's imports and warm-up): it says
    # nothing of the cells after it.
    firsts = {result.worker: result.cell for result in sorted(results, key=lambda r: r.timings.finished, reverse=True)}
    measured = {cell: seconds for cell, seconds in done.items() if cell not in firsts.values()}
    # Two groups of cells, measured apart on a GPU: those that launch the kernels of cases that autotune, and the rest.
    # The run starts the first kind first (harness.plugin.scheduling), and they cost unlike their rows' means (minutes
    # of autotuning): their measure says nothing of the other cells. An autotuned case's control launches no kernel: it
    # is of the rest (where the case's configs are compiled ahead, its controls are all its cells that run in the run's
    # first seconds, slowed by the slices beside them). On the interpreter, which cannot autotune, one group.
    tuned = {name for name, case in plan.cases.items() if case.autotune_configs > 0 and AUTOTUNE_S[plan.mode]}

    def autotunes(cell: Any) -> bool:
        return cell.case in tuned and cell.wrapping is not Wrapping.CONTROL

    overall: dict[bool, float] = {}
    for group in (True, False):
        cells = [cell for cell in given if autotunes(cell) is group]
        given_done = sum(given[cell] for cell in cells if cell in measured)
        if given_done > 0 and given_done >= TRUSTED_SHARE * sum(given[cell] for cell in cells):
            overall[group] = sum(measured[cell] for cell in cells if cell in measured) / given_done
        elif calibrated or all(cell in done for cell in cells):
            overall[group] = 1.0
        else:
            return None
    running = {cell: seconds for cell, seconds in running.items() if cell in given and cell not in done}
    scale = _scales(given, measured, running, autotunes, overall)
    # What a runner's start cost the cells done, on average, but each worker's first (the run's first runners wait for
    # the runner template), else what the plan expected: each cell left pays as much (on a GPU each cell has a process
    # of its own, a library's started in seconds; on the interpreter a worker's process serves its cells, nearly 0).
    starts = [result.timings.process_start for result in results if result.cell in measured]
    starting = sum(starts) / len(starts) if starts else plan.runner_start
    still = [_still(cell, seconds, given, measured, scale, autotunes) for cell, seconds in running.items()]
    left = [given[cell] * scale(cell) + starting for cell in given if cell not in done and cell not in running]
    return _finish(still, left, _parallel(plan.workers, plan.cores), plan.mode) + END_S[plan.mode]


def _still(cell: Any, seconds: float, given: dict[Any, float], measured: dict[Any, float], scale: Any, group: Any) -> float:
    """What a cell running for `seconds` has left: what it was given, less its time so far; past that, what the cells
    done of its kind and group that ran longer took at its scale (each its measure over what it was given, times what
    this one was given), less its time so far; past every one of those too, as long again."""
    expected = given[cell] * scale(cell)
    if seconds < expected:
        return expected - seconds
    longer = [took / given[other] * given[cell] for other, took in measured.items()
              if given[other] > 0 and _kind(other, group) == _kind(cell, group)]
    longer = [took for took in longer if took > seconds]
    return sum(longer) / len(longer) - seconds if longer else seconds


def _kind(cell: Any, group: Any) -> tuple[str, bool]:
    """What a cell's pace is measured with (remaining_seconds): its kind of row, in its group."""
    return cell.row.spec.kind.value, group(cell)


def _scales(given: dict[Any, float], measured: dict[Any, float], running: dict[Any, float], group: Any,
            overall: dict[bool, float]) -> Any:
    """The scale of each cell's given work: its kind of row's measure, in its group (remaining_seconds)."""
    seen = dict(measured)
    seen.update({cell: 2 * seconds for cell, seconds in running.items() if seconds > given[cell] * overall[group(cell)]})
    sums: dict[tuple[str, bool], list[float]] = {}
    for cell, seconds in seen.items():
        total = sums.setdefault(_kind(cell, group), [0.0, 0.0])
        total[0] += seconds
        total[1] += given[cell]

    def scale(cell: Any) -> float:
        took, gave = sums.get(_kind(cell, group), (0.0, 0.0))
        prior = PRIOR_CELLS * given[cell]
        return (took + prior * overall[group(cell)]) / (gave + prior) if gave + prior > 0 else overall[group(cell)]

    return scale


def _finish(running: list[float], left: list[float], workers: int, mode: str) -> float:
    """When the last of `workers` ends: each starts with what its running cell has left, and takes the next of the
    cells left, costliest first, with its report's time, as it comes free."""
    free = sorted(running, reverse=True)[:workers]
    free += [0.0] * (workers - len(free))
    heapq.heapify(free)
    for seconds in sorted(left, reverse=True):
        heapq.heapreplace(free, free[0] + seconds + CELL_S[mode])
    return max(free)


def replayed(results: Any, plan: Plan, share: float = TRUSTED_SHARE) -> tuple[float, float, float] | None:
    """What the estimate of the time left said once the cells done held `share` of a finished run's work, replayed from
    each cell's end and wall time (the cells done then, those running and for how long), against the truth: (seconds
    into the run, the time it gave the cells left, the time they took until the last one ended). The cells of a re-run
    merged in are left out. None for a run stopped early, parts merged, or cells that hold no times."""
    cells = replayable(results)
    if not cells:
        return None
    total, so_far, now = sum(c.timings.work for c in cells), 0.0, 0.0
    for cell in sorted(cells, key=lambda c: c.timings.finished):
        so_far, now = so_far + cell.timings.work, cell.timings.finished
        if so_far >= share * total:
            break
    done = [c for c in cells if c.timings.finished <= now]
    running = {c.cell: now - began for c in cells if (began := c.timings.finished - c.timings.wall) < now < c.timings.finished}
    estimated = remaining_seconds(done, plan, running)
    if estimated is None:
        return None
    began = min(c.timings.finished - c.timings.wall for c in cells)
    return now - began, estimated - END_S[plan.mode], max(c.timings.finished for c in cells) - now


def replayable(results: Any) -> list[CellResult]:
    """The cells of one finished run that `replayed` replays: none for a run stopped early or parts merged; the cells of
    a re-run merged in (`report --rerun`) left out, and those carried over."""
    if not results.complete or results.fingerprint.shards is not None:
        return []
    rerun = {cell for run in results.fingerprint.reruns for cell in run.cells}
    return [c for c in results.cells if c.timings.finished and c.carried_from is None and c.cell.id not in rerun]


def plan_of_run(results: Any, cases: dict[str, Any]) -> Plan:
    """The plan a finished run had, from its results file and its cases (loaded again), for `replayed`."""
    fingerprint = results.fingerprint
    return Plan(cells=[c.cell for c in replayable(results)], all_cells=len(results.cells), cases=cases,
                specs=list(fingerprint.cases or []), profile=fingerprint.hypothesis.profile or DEFAULT_PROFILE,
                gpu=fingerprint.gpu.name if fingerprint.gpu.available else None, workers=fingerprint.workers or 1, report_dir="",
                cores=fingerprint.cpus, compiled_ahead=frozenset(p["case"] for p in results.prebuilt if p.get("case")))


FINISHING_S = 5.0  # an estimate of the rest under this says the last cells are still running, not a number


def _given(plan: Plan, profile: str) -> dict[Any, float] | None:
    """The work the estimate gives each of the plan's cells under `profile`; None where it has none."""
    given = {cell: cell_seconds(cell, plan.mode, profile, plan.cases, plan.compiled_ahead) for cell in plan.cells}
    return None if None in given.values() else given  # type: ignore[return-value]


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
    carried = (f"; {plan.carried} cells carried over from {plan.carried_from}, unchanged since (--full-run runs them)"
               if plan.carried else "")
    if not plan.cells:
        return (f"nothing to run{carried}: 0 cells{part} from {_count(len(plan.cases), 'case')} of {', '.join(plan.specs)}, "
                "so no time to expect")
    rows, styles = len({c.row for c in plan.cells}), len({c.wrapping for c in plan.cells})
    lines = [f"{len(plan.cells)} cells{part}: {_count(len(plan.cases), 'case')} from {', '.join(plan.specs)} x "
             f"{_count(styles, 'wrapping style')} x {_count(rows, 'row')}, {where}, {_count(plan.workers, 'worker')}; "
             f"reports to {plan.report_dir}{carried}"]
    expected = expected_seconds(plan)
    lines.append(f"profile {plan.profile}: {PROFILES[plan.profile].summary}; "
                 + (f"expect about {_minutes(expected)}" if expected else "no timing of this profile here to estimate from"))
    if plan.runner_start:
        lines.append(f"each cell's runner imports the cases itself, {plan.runner_start:.1f} s a cell: no process can be forked "
                     f"after their import ({plan.runner_start_why or 'it initializes CUDA or starts a thread'})")
    if plan.profile != DEFAULT_PROFILE:
        full = expected_seconds(plan, DEFAULT_PROFILE)
        lines.append(f"the full profile (--matrix-profile={DEFAULT_PROFILE}: {PROFILES[DEFAULT_PROFILE].summary}) "
                     + (f"takes about {_minutes(full)} here" if full else "has no timing here to estimate from")
                     + ("; its answers are the chart's, measured on a GPU" if not plan.gpu else ""))
    return "\n".join(lines)


def progress(results: Iterable[CellResult], plan: Plan, elapsed_s: float, running: dict[Any, float] | None = None) -> str:
    """How far the run got: cells done, how many passed and failed so far, and about how long the rest takes (the cells
    `running`: seconds since each began)."""
    results = list(results)
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome.value] = counts.get(result.outcome.value, 0) + 1
    done, total = len(results), len(plan.cells)
    order = [o.value for o in Outcome]
    summary = ", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=order.index))
    remaining = remaining_seconds(results, plan, running) if 0 < done < total else None
    left = "" if remaining is None else f"; about {_minutes(remaining)} left"
    # The cells still running are past their estimate: say so, not "0 s". Not while cells are yet to begin: the rest is
    # then cells the estimate gives next to nothing (a library's skipped cells, dealt last), and "about 3 s" is its word.
    if remaining is not None and remaining < FINISHING_S and total - done <= len(running or {}):
        left = f"; finishing the last {_count(total - done, 'cell')} (past the estimate: each ends by its --cell-timeout)"
    return f"{done}/{total} cells in {_minutes(elapsed_s)} ({summary}){left}"

"""The speed figures of a run, read off its results file. The cells' work, the lower bound on wall time it
sets, efficiency, the harness's overhead per cell, where the work went, each worker's memory."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable

from harness.model.fingerprint import Fingerprint
from harness.model.outcome import WAITED_FOR_PACKAGE, Memory, Outcome, Stage
from harness.model.results import Results


@dataclass
class WorkerFigures:
    worker: str
    cells: int
    host_peak_mb: float | None
    gpu_peak_mb: float | None
    gpu_allocated_first_mb: float | None  # after its first cell, its artifacts freed
    gpu_allocated_last_mb: float | None
    gpu_growth_max_step_mb: float | None  # the largest rise of allocated memory from one cell to the next


@dataclass
class Figures:
    cells: int
    workers: int
    wall_s: float
    work_s: float
    longest_cell: str
    longest_cell_s: float
    bound_s: float
    efficiency: float
    overhead_median_s: float
    overhead_worst_s: float
    overhead_worst_cell: str
    process_starts: int
    process_start_median_s: float | None
    per_worker: list[WorkerFigures] = field(default_factory=list)
    cpu_s: float = 0.0  # the cells' CPU seconds (Timings.cpu)
    machine_busy: float | None = None  # the share of all cores' time the machine was busy during the run (Linux)
    cores: int | None = None
    by_row: list[RowFigures] = field(default_factory=list)
    prebuilt: list[dict[str, Any]] = field(default_factory=list)  # Results.prebuilt: built for the cells before they asked
    # Seconds from the controller's start (Results.timeline): the first and last worker set up, their collections done
    # (first, last), the machine's facts read (beside the cells), the first cell begun (its runner starting), the last
    # cell done, the reports begun. Empty for a results file without a timeline.
    timeline: dict[str, float] = field(default_factory=dict)
    confirmed: int = 0  # cells run again alone (harness.plugin.confirmation)
    differed: int = 0  # of those, cells whose outcome alone was not their outcome in a shared process
    confirmation_s: float = 0.0  # the wall time of those runs alone, in the workers (in work_s too)
    # Those seconds by why the cells ran alone (Confirmed's values), and by where they went (Confirmation.spent)
    confirmation_why_s: dict[str, float] = field(default_factory=dict)
    confirmation_spent_s: dict[str, float] = field(default_factory=dict)


@dataclass
class RowFigures:
    """Where one row's work went: its cells' work and CPU seconds, and the seconds in each stage."""

    row: str
    cells: int
    work_s: float
    cpu_s: float
    stages: dict[str, float]


def _mb(memory: Memory, key: str) -> float | None:
    return getattr(memory, key)


def timed_cells(results: Results) -> list[Any]:
    """The cells this run timed: not those carried over from a baseline (their timings are their first run's)."""
    return [c for c in results.cells if c.timings.wall > 0 and c.carried_from is None]


def figures(results: Results, wall_s: float) -> Figures:
    """The benchmark's figures from a run's results and the wall time of the whole run."""
    cells = timed_cells(results)
    if not cells:
        raise ValueError("the results hold no timed cells: nothing ran")
    workers = results.fingerprint.workers or 1
    # A cell's run alone, confirming it, is work its worker did for it.
    work = {c.cell.id: c.timings.work + (c.confirmation.seconds if c.confirmation else 0.0) for c in cells}
    confirmed = [c.confirmation for c in cells if c.confirmation]
    longest = max(work, key=work.__getitem__)
    bound = max(work[longest], sum(work.values()) / workers)
    # A crashed or hung cell reports no work of its own, so it says nothing about the overhead.
    overheads = {c.cell.id: c.timings.overhead for c in cells if c.outcome not in (Outcome.CRASH, Outcome.TIMEOUT)} or {"-": 0.0}
    worst = max(overheads, key=overheads.__getitem__)
    starts = [c.timings.process_start for c in cells if c.timings.process_start > 0]

    per_worker = []
    by_worker: dict[str, list[Any]] = {}
    for c in sorted(cells, key=lambda c: c.timings.finished):
        by_worker.setdefault(c.worker or "?", []).append(c)
    for name, mine in sorted(by_worker.items()):
        allocated = [_mb(c.memory, "gpu_allocated_after_mb") for c in mine]
        allocated = [a for a in allocated if a is not None]
        steps = [b - a for a, b in zip(allocated, allocated[1:])]
        host = [h for c in mine if (h := _mb(c.memory, "host_peak_mb")) is not None]
        gpu = [g for c in mine if (g := _mb(c.memory, "gpu_peak_mb")) is not None]
        per_worker.append(WorkerFigures(
            worker=name,
            cells=len(mine),
            host_peak_mb=max(host) if host else None,
            gpu_peak_mb=max(gpu) if gpu else None,
            gpu_allocated_first_mb=allocated[0] if allocated else None,
            gpu_allocated_last_mb=allocated[-1] if allocated else None,
            gpu_growth_max_step_mb=max(steps) if steps else (0.0 if allocated else None),
        ))
    rows: dict[str, RowFigures] = {}
    for c in cells:
        row = rows.setdefault(c.cell.row.value, RowFigures(c.cell.row.value, 0, 0.0, 0.0, {}))
        row.cells, row.work_s, row.cpu_s = row.cells + 1, row.work_s + c.timings.work, row.cpu_s + c.timings.cpu
        for stage, seconds in c.timings.stages.items():
            row.stages[stage] = row.stages.get(stage, 0.0) + seconds
    return Figures(
        cells=len(cells),
        workers=workers,
        wall_s=wall_s,
        work_s=sum(work.values()),
        longest_cell=longest,
        longest_cell_s=work[longest],
        bound_s=bound,
        efficiency=bound / wall_s if wall_s > 0 else 0.0,
        overhead_median_s=statistics.median(overheads.values()),
        overhead_worst_s=overheads[worst],
        overhead_worst_cell=worst,
        process_starts=len(starts),
        process_start_median_s=statistics.median(starts) if starts else None,
        per_worker=per_worker,
        cpu_s=sum(c.timings.cpu for c in cells),
        by_row=sorted(rows.values(), key=lambda r: -r.work_s),
        prebuilt=list(results.prebuilt),
        timeline=_timeline(results, cells),
        confirmed=len(confirmed),
        differed=sum(1 for c in confirmed if c.agreed is False),
        confirmation_s=sum(c.seconds for c in confirmed),
        confirmation_why_s=_summed((c.why.value, c.seconds) for c in confirmed),
        confirmation_spent_s=_summed(part for c in confirmed for part in c.spent.items()),
    )


def _summed(pairs: Iterable[tuple[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, seconds in pairs:
        out[key] = out.get(key, 0.0) + seconds
    return out


def _timeline(results: Results, cells: list[Any]) -> dict[str, float]:
    started = results.timeline.get("started")
    if started is None:
        return {}
    timeline = {k: v for k, v in results.timeline.items() if k != "started"}
    timeline["first cell begun"] = min(c.timings.finished - c.timings.wall for c in cells) - started
    timeline["last cell done"] = max(c.timings.finished for c in cells) - started
    if results.wall_time_s is not None:
        timeline["reports begun"] = results.wall_time_s
    return timeline


def timeline_text(timeline: dict[str, float]) -> str | None:
    """Where the run's start and end went, in a line: seconds from the controller's start."""
    if not timeline:
        return None
    said = {"first_configured": "first worker set up", "last_configured": "last worker set up", "first_collected": "first collected",
            "last_collected": "last collected", "machine_read": "machine read"}
    return ", ".join(f"{said.get(k, k)} {v:.1f}" for k, v in timeline.items())


def prebuilt_text(prebuilt: list[dict[str, Any]]) -> str | None:
    """What the run built for its cells before they asked, in a line: each build's seconds and CPU seconds, or why not."""
    if not prebuilt:
        return None

    def one(p: dict[str, Any]) -> str:
        if p.get("error"):
            return f"{p['build']} not built ({p['error']})"
        return f"{p['build']} {_fmt(p.get('seconds'), 1)} s (CPU {_fmt(p.get('cpu_s'), 1)} s)"

    return ", ".join(one(p) for p in prebuilt)


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render(f: Figures, fingerprint: Fingerprint, command: str) -> str:
    device = fingerprint.gpu.name if fingerprint.gpu.available else "CPU (Triton interpreter)"
    lines = [
        f"command: {command}",
        f"device: {device}; torch {fingerprint.torch}, triton {fingerprint.triton}; "
        f"{fingerprint.cpus} CPUs{f' ({fingerprint.cpu})' if fingerprint.cpu else ''}; caches: {fingerprint.caches or 'fresh'}; "
        f"git {fingerprint.commit}",
        "",
        f"cells                        {f.cells}",
        f"workers                      {f.workers}",
        f"wall time                    {f.wall_s:.1f} s",
        f"sum of the cells' work       {f.work_s:.1f} s",
        f"longest cell                 {f.longest_cell_s:.1f} s ({f.longest_cell})",
        f"lower bound                  {f.bound_s:.1f} s = max(longest cell, work / workers)",
        f"efficiency                   {f.efficiency:.3f} = lower bound / wall time",
        f"overhead per cell, median    {f.overhead_median_s:.3f} s",
        f"overhead per cell, worst     {f.overhead_worst_s:.2f} s ({f.overhead_worst_cell})",
        f"runner processes started     {f.process_starts}, median {_fmt(f.process_start_median_s, 1)} s each",
        f"the cells' CPU time          {f.cpu_s:.1f} s (their runner processes and the processes those waited for)",
        f"confirmed alone              {f.confirmed} cells, {f.differed} differed; {f.confirmation_s:.1f} s of the work, "
        f"{f.confirmation_s / max(f.wall_s * f.workers, 1e-9):.1%} of the workers' time (wall time x workers)",
    ]
    if f.confirmation_s > 0:
        why = "; ".join(f"{seconds:.1f} s {reason}" for reason, seconds in sorted(f.confirmation_why_s.items()))
        spent = f.confirmation_spent_s
        lines.append(f"  why, where it went         {why}; {spent.get('process_start', 0.0):.1f} s waiting for a runner process, "
                     f"{spent.get('plain_eager', 0.0):.1f} s checking in plain eager, {spent.get('setup', 0.0):.1f} s in setup, "
                     f"{spent.get('compile', 0.0):.1f} s compiling, "
                     f"{spent.get('run', 0.0):.1f} s running examples, {spent.get('harness', 0.0):.1f} s the harness's own")
    if (built := prebuilt_text(f.prebuilt)) is not None:
        lines.append(f"built before the cells       {built} (harness.execution.prebuild; in no cell's work or CPU)")
    if (timeline := timeline_text(f.timeline)) is not None:
        lines.append(f"timeline, s from the start    {timeline} (a runner's start is in its first cell)")
    if f.cores:
        # Not a bound on the wall time: CUDA waits for the GPU busily by default, so a cell waiting for a GPU that
        # other cells keep busy (autotuners timing configs) counts that wait as CPU time too.
        lines.append(f"CPU time per core            {f.cpu_s / f.cores:.1f} s = the cells' CPU time / {f.cores} cores "
                     "(with CUDA's busy waits for the GPU)")
    if f.machine_busy is not None:
        lines.append(f"machine busy                 {f.machine_busy:.2f} of {f.cores} cores' time during the run (/proc/stat)")
    lines += [
        "",
        "Where the work went, by row (seconds summed over the row's cells; stages as the cells entered them, every dtype's):",
        "",
    ]
    stages = [stage for stage in _STAGE_COLUMNS if any(r.stages.get(stage) for r in f.by_row)]
    lines += [
        "| row | cells | work | CPU | " + " | ".join(stages) + " |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in stages) + " |",
    ]
    for r in f.by_row:
        lines.append(f"| {r.row} | {r.cells} | {r.work_s:.0f} | {r.cpu_s:.0f} | "
                     + " | ".join(f"{r.stages.get(stage, 0.0):.0f}" for stage in stages) + " |")
    lines += [
        "",
        "| worker | cells | peak host MB | peak GPU MB | GPU allocated after first cell MB | after last cell MB | largest rise between cells MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for w in f.per_worker:
        lines.append(
            f"| {w.worker} | {w.cells} | {_fmt(w.host_peak_mb)} | {_fmt(w.gpu_peak_mb)} | {_fmt(w.gpu_allocated_first_mb, 1)} "
            f"| {_fmt(w.gpu_allocated_last_mb, 1)} | {_fmt(w.gpu_growth_max_step_mb, 1)} |"
        )
    return "\n".join(lines) + "\n"


# The stages in the table of where the work went, in the order a cell meets them.
_STAGE_COLUMNS = [*(stage.value for stage in Stage), WAITED_FOR_PACKAGE]

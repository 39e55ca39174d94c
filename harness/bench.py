"""How fast the matrix runs, and how much of its time is the harness's own: `python -m harness bench`.

It runs the matrix as a user does (`pytest -n auto`, fresh caches) and reads the figures off the
results file: the cells' own work, the lower bound on wall time that work sets, efficiency against it,
the harness's overhead per cell, and each worker's peak host and GPU memory and GPU memory growth.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from harness.outcome import WAITED_FOR_PACKAGE, Memory, Outcome, Stage
from harness.results import Results, load


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


def figures(results: Results, wall_s: float) -> Figures:
    """The benchmark's figures from a run's results and the wall time of the whole run."""
    cells = [c for c in results.cells if c.timings.wall > 0]
    if not cells:
        raise ValueError("the results hold no timed cells: nothing ran")
    workers = int(results.fingerprint.get("workers") or 1)
    work = {c.cell.id: c.timings.work for c in cells}
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
        row = rows.setdefault(c.cell.path.value, RowFigures(c.cell.path.value, 0, 0.0, 0.0, {}))
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
    )


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render(f: Figures, fingerprint: dict[str, Any], command: str) -> str:
    gpu = fingerprint.get("gpu") or {}
    device = gpu.get("name") if gpu.get("available") else "CPU (Triton interpreter)"
    lines = [
        f"command: {command}",
        f"device: {device}; torch {fingerprint.get('torch')}, triton {fingerprint.get('triton')}; "
        f"{fingerprint.get('cpus')} CPUs; caches: {fingerprint.get('caches', 'fresh')}; git {(fingerprint.get('git') or {}).get('commit')}",
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
    ]
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


def busy_cores() -> tuple[float, float, int] | None:
    """The machine's busy and total CPU time so far, in seconds summed over cores, and its core count, from
    /proc/stat (Linux); None elsewhere."""
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
        fields_ = [float(v) for v in lines[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields_[3] + (fields_[4] if len(fields_) > 4 else 0.0)  # idle and iowait
    return (sum(fields_[:8]) - idle) / ticks, sum(fields_[:8]) / ticks, cores


def matrix_plugin_args() -> list[str]:
    """`-p harness.plugin` where the package is not installed (a checkout run as `python -m harness`), so that
    pytest loads the plugin; nothing where its entry point loads it (naming it twice would fail)."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "harness.plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "harness.plugin"]


def matrix_args(pytest_args: list[str]) -> list[str]:
    """pytest's arguments for a run of the matrix: the plugin where it is not installed, --matrix, and the
    given arguments with each matrix option's value joined to it (`--cases=X`)."""
    from harness.plugin import with_values_joined

    return [*matrix_plugin_args(), "--matrix", *with_values_joined(pytest_args)]


def matrix_command(pytest_args: list[str], report_dir: str) -> list[str]:
    """The matrix as a user runs it (`pytest -n auto` unless the arguments choose -n), reports to report_dir."""
    if not any(a.startswith(("-n", "--numprocesses")) for a in pytest_args):
        pytest_args = ["-n", "auto", *pytest_args]
    return [sys.executable, "-m", "pytest", f"--report-dir={os.path.abspath(report_dir)}", "-q", *matrix_args(pytest_args)]


def _die_with_parent() -> None:
    """In the child, before pytest starts: SIGTERM when this process dies, even by SIGKILL (Linux), so that an
    orphaned run still stops and writes its reports."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell's background job inherits SIGINT ignored
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_matrix(command: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """A pytest run of the matrix in a session of its own: Ctrl-C at a terminal, or `timeout`'s signal to its
    process group, reaches this process alone, and `forwarding_signals` passes it on once."""
    return subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent, **popen)


@contextlib.contextmanager
def forwarding_signals(runs: list[subprocess.Popen[bytes]]) -> Iterator[list[str]]:
    """SIGINT and SIGTERM sent to this process are passed to the matrix runs still going, which stop as a run
    stopped by hand does: they write their reports, marked incomplete. This process waits for them instead of
    dying (as subprocess.run would, killing its child); the names of the signals received are yielded."""
    received: list[str] = []

    def forward(signum: int, frame: Any) -> None:
        received.append(signal.Signals(signum).name)
        print(f"{signal.Signals(signum).name}: passed to the matrix run, which writes its reports (marked incomplete)",
              file=sys.stderr, flush=True)
        for run in runs:
            if run.poll() is None:
                run.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(pytest_args: list[str], out: str | None = None, report_dir: str | None = None) -> int:
    """Run the matrix as a user does and print its figures; exit as pytest did (2: no results)."""
    report_dir = os.path.abspath(report_dir or tempfile.mkdtemp(prefix="tcm-bench-"))
    command = matrix_command(pytest_args, report_dir)
    pytest_args = command[command.index("--matrix") + 1:]
    print(f"running: {' '.join(shlex.quote(c) for c in command)}", flush=True)
    start, busy_before = time.perf_counter(), busy_cores()
    runs = [start_matrix(command)]
    with forwarding_signals(runs) as received:
        returncode = runs[0].wait()
    wall, busy_after = time.perf_counter() - start, busy_cores()
    path = os.path.join(report_dir, "results.json")
    if not os.path.exists(path):
        print(f"bench: the matrix wrote no {path} (pytest exit {returncode})", file=sys.stderr)
        return 2
    results = load(path)
    if not any(c.timings.wall > 0 for c in results.cells):
        problems = "; ".join(p.get("message", "") for p in results.problems)
        print(f"bench: no cell ran (pytest exit {returncode}){': ' + problems if problems else ''}", file=sys.stderr)
        return 2
    measured = figures(results, wall)
    if busy_before and busy_after:
        measured.cores = busy_after[2]
        measured.machine_busy = (busy_after[0] - busy_before[0]) / max(busy_after[1] - busy_before[1], 1e-9) * busy_after[2]
    text = render(measured, results.fingerprint, "python -m harness bench " + " ".join(map(shlex.quote, pytest_args)))
    if not results.complete:
        text += (f"\nINCOMPLETE: {len(results.missing)} cells never reported ({results.interrupted or ', '.join(received) or 'stopped'}); "
                 "the figures cover the cells that ran\n")
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)
    return returncode

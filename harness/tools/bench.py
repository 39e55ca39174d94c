"""How fast the matrix runs, and how much of its time is the harness's own: `python -m harness bench`.

It runs the matrix as a user does (`pytest --matrix -n auto`, fresh caches) and reads the figures off the
results file: the cells' own work, the lower bound on wall time that work sets, efficiency against it,
the harness's overhead per cell, and each worker's peak host and GPU memory and GPU memory growth.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import time
from typing import Any

from harness.model.results import Results, load
from harness.reporting.figures import figures, render, timed_cells
from harness.tools.launch import forwarding_signals, matrix_command, results_written, start_matrix


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


def estimate_line(results: Results) -> str:
    """How near the run's estimate of the time left was once a tenth of its work was done, and at each later tenth
    (replayed from its results, its cases loaded again); a line saying why not where it cannot be told."""
    from harness.authoring import registry  # here, not at the top: it imports the cases, and torch with them
    from harness.plugin import estimate

    if not estimate.replayable(results):
        return "estimate at a tenth   not told: the run stopped early, is parts merged, or its cells hold no times"
    cases = registry.load(results.fingerprint.cases or [registry.BUILTIN]).cases
    plan = estimate.plan_of_run(results, cases)
    replay = estimate.replayed(results, plan)
    if replay is None:
        return "estimate at a tenth   not told: the cells done then say nothing of this machine's pace yet"
    now, estimated, real = replay
    return (f"estimate at a tenth   {estimated:.0f} s left, said {now:.0f} s in; the last cell ended {real:.0f} s later "
            f"({estimated / max(real, 1e-9):.2f} of it; replayed from the cells' ends)\n" + _later(results, plan))


def _later(results: Results, plan: Any) -> str:
    """The same at two to nine tenths of the work: each the estimate of the time left over the time the cells took."""
    from harness.plugin import estimate

    said = []
    for tenths in range(2, 10):
        replay = estimate.replayed(results, plan, tenths / 10)
        said.append(f"{tenths}/10 " + ("-" if replay is None else f"{replay[1] / max(replay[2], 1e-9):.2f}"))
    return "and later            " + ", ".join(said) + " (each: the time said left over the time the cells took)"


def of_results(path: str, out: str | None = None) -> int:
    """The figures of a run already made, from its results file (its wall time the run's own)."""
    results = load(path)
    if not timed_cells(results):
        print(f"bench: {path} holds no cell that ran", file=sys.stderr)
        return 2
    _said(render(figures(results, results.wall_time_s), results.fingerprint, f"(the run of {path})") + "\n" + estimate_line(results), out)
    return 0


def main(pytest_args: list[str], out: str | None = None, report_dir: str | None = None) -> int:
    """Run the matrix as a user does and print its figures; exit as pytest did (2: no results)."""
    report_dir = os.path.abspath(report_dir or tempfile.mkdtemp(prefix="tcm-bench-"))
    command = matrix_command(pytest_args, report_dir)
    pytest_args = command[command.index("--matrix") + 1:]
    print(f"running: {' '.join(shlex.quote(c) for c in command)}", flush=True)
    started, start, busy_before = time.time(), time.perf_counter(), busy_cores()
    runs = [start_matrix(command)]
    with forwarding_signals(runs) as received:
        returncode = runs[0].wait()
    wall, busy_after = time.perf_counter() - start, busy_cores()
    path = results_written(report_dir, started)
    if path is None:
        print(f"bench: the matrix wrote no results in {report_dir} (pytest exit {returncode})", file=sys.stderr)
        return 2
    results = load(path)
    if not timed_cells(results):
        problems = "; ".join(p.get("message", "") for p in results.problems)
        print(f"bench: no cell ran (pytest exit {returncode}){': ' + problems if problems else ''}", file=sys.stderr)
        return 2
    measured = figures(results, wall)
    if busy_before and busy_after:
        measured.cores = busy_after[2]
        measured.machine_busy = (busy_after[0] - busy_before[0]) / max(busy_after[1] - busy_before[1], 1e-9) * busy_after[2]
    text = render(measured, results.fingerprint, "python -m harness bench " + " ".join(map(shlex.quote, pytest_args)))
    text += "\n" + estimate_line(results)
    if not results.complete:
        text += (f"\nINCOMPLETE: {len(results.missing)} cells never reported ({results.interrupted or ', '.join(received) or 'stopped'}); "
                 "the figures cover the cells that ran\n")
    _said(text, out)
    return returncode


def _said(text: str, out: str | None) -> None:
    """The figures printed, and written to `out` too where given."""
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)

"""Is the chart repeatable? `python -m harness repeat` runs the matrix N times and compares the runs.

Cells are compared as `diff` and `--baseline` compare them: by outcome, and for a failure its stage and
exception type. A cell whose outcome differs between runs is a bug to find (a race, an output left
unwritten, a tolerance); until it is found, the combined report labels it flaky with each run's outcome
as the evidence, and the command exits 1.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field

from tabulate import tabulate

from harness.model.cell import Cell
from harness.model.errors import ResultsError
from harness.model.outcome import CellResult
from harness.model.results import Results, load, write_atomic
from harness.reporting import report
from harness.reporting.diff import COMPARED, describe, signature
from harness.tools.launch import forwarding_signals, matrix_command, results_written, start_matrix


@dataclass
class Repeatability:
    runs: list[tuple[str, Results]]
    same: int = 0
    differing: dict[Cell, list[CellResult | None]] = field(default_factory=dict)  # cell -> its result in each run
    reworded: dict[Cell, list[str]] = field(default_factory=dict)  # same outcome, another first line of the error


def compare(runs: list[tuple[str, Results]]) -> Repeatability:
    if len(runs) < 2:
        raise ResultsError("repeatability needs at least two runs to compare")
    found = Repeatability(runs=runs)
    by_run = [r.by_cell() for _, r in runs]
    for cell in sorted(set().union(*by_run), key=lambda c: c.id):
        seen = [cells.get(cell) for cells in by_run]
        if any(c is None for c in seen) or len({signature(c) for c in seen if c}) > 1:
            found.differing[cell] = seen
        else:
            found.same += 1
            messages = [c.message or "" for c in seen if c]
            if len(set(messages)) > 1:
                found.reworded[cell] = messages
    return found


def _describe(cell: CellResult | None) -> str:
    return "did not run" if cell is None else describe(cell)


def evidence(outcomes: list[CellResult | None]) -> str:
    """The flaky label's evidence: what each run gave."""
    return "differs across runs: " + "; ".join(f"run {n} {_describe(c)[:120]}" for n, c in enumerate(outcomes, 1))


def combined(found: Repeatability) -> Results:
    """The first run's results, with every cell that differed across the runs labelled flaky."""
    _, first = found.runs[0]
    cells = {c.cell: c for c in first.cells}
    for cell, outcomes in found.differing.items():
        result = cells.get(cell) or next(c for c in outcomes if c is not None)
        cells[cell] = dataclasses.replace(result, flaky=evidence(outcomes))
    ran = {cell.id for cell in cells}
    return Results(fingerprint=first.fingerprint, cells=list(cells.values()), complete=all(r.complete for _, r in found.runs),
                   missing=sorted({m for _, r in found.runs for m in r.missing} - ran), wall_time_s=first.wall_time_s,
                   problems=first.problems)


def render(found: Repeatability, command: str | None = None) -> str:
    runs = found.runs
    out = ["# Repeatability", ""]
    if command:
        out += [f"command: `{command}`", ""]
    header = ["", *[f"run {n}" for n in range(1, len(runs) + 1)]]
    rows = [["results", *[f"`{path}`" for path, _ in runs]],
            ["cells", *[str(len(r.cells)) for _, r in runs]],
            ["complete", *[str(r.complete) for _, r in runs]],
            ["wall time s", *[f"{r.wall_time_s or 0:.0f}" for _, r in runs]],
            ["finished", *[str(r.fingerprint.time) for _, r in runs]]]
    rows += [[name, *[str(get(r.fingerprint)) for _, r in runs]] for name, get in COMPARED]
    out += [tabulate(rows, headers=header, tablefmt="github"), ""]
    environments = {tuple(str(get(r.fingerprint)) for name, get in COMPARED if name != "commit") for _, r in runs}
    if len(environments) > 1:
        out += ["> **WARNING: the runs measured different environments**; a difference below may be the environment's.", ""]
    out.append(f"**{len(found.differing)} cells differ across the {len(runs)} runs**, {found.same} are the same in every run "
               "(compared by outcome, and for a failure by stage and exception type).")
    if found.differing:
        rows = [[f"`{cell.id}`", *[report.cell_text(_describe(c))[:160] for c in outcomes]]
                for cell, outcomes in found.differing.items()]
        out += ["", "## Cells that differ (labelled flaky in the combined report)", "",
                tabulate(rows, headers=["cell", *header[1:]], tablefmt="github")]
    if found.reworded:
        out += ["", f"## Same outcome, another first line of the error ({len(found.reworded)} cells)", "",
                "Not a difference in the chart (messages carry addresses, sizes and the smallest example found), shown "
                "so that a change of cause cannot hide:", ""]
        rows = [[f"`{cell.id}`", *[report.cell_text(m)[:160] for m in messages]] for cell, messages in list(found.reworded.items())[:40]]
        out.append(tabulate(rows, headers=["cell", *header[1:]], tablefmt="github"))
    out.append("")
    return "\n".join(out)


def write(found: Repeatability, out_dir: str, command: str | None = None) -> list[str]:
    """REPEAT.md, and the three reports of the first run with the differing cells labelled flaky."""
    written = report.write(combined(found), out_dir)
    path = os.path.join(out_dir, "REPEAT.md")

    write_atomic(path, render(found, command))
    return [path, *written]


def run(count: int, out_dir: str, pytest_args: list[str], concurrent: bool = False) -> int:
    """Run the matrix `count` times (one after another, or at once on one GPU each) and compare the runs.
    Exit 0 when every cell is the same in every run, 1 when some differ, 2 when a run left no results."""
    if count < 2:
        print("repeat: --runs must be at least 2", file=sys.stderr)
        return 2
    out_dir = os.path.abspath(out_dir)
    env_per_run: list[dict[str, str]] = [{} for _ in range(count)]
    if concurrent:
        import torch  # here, not at the top: keeps torch out of the torch-free tools

        gpus = torch.cuda.device_count()
        if gpus < count:
            print(f"repeat: --concurrent runs each run on a GPU of its own: {count} runs need {count} GPUs, this machine has {gpus}",
                  file=sys.stderr)
            return 2
        cores = os.cpu_count() or 1
        workers = _workers(pytest_args) or max(1, cores // count)
        if not any(a.startswith(("-n", "--numprocesses")) for a in pytest_args):
            pytest_args = ["-n", str(workers), *pytest_args]
        # The runs share the cores: each runner gets its share of them, not a share of the whole machine.
        threads = os.environ.get("OMP_NUM_THREADS") or str(max(1, cores // (count * workers)))
        env_per_run = [{"CUDA_VISIBLE_DEVICES": str(n), "OMP_NUM_THREADS": threads} for n in range(count)]
    os.makedirs(out_dir, exist_ok=True)
    started = time.time()  # a run-N folder's results from an earlier repeat are not this one's
    procs: list[subprocess.Popen[bytes]] = []
    # Ctrl-C or SIGTERM reaches the runs going (they write their reports, marked incomplete), starts no more
    # runs, and the cells the runs finished are compared.
    with forwarding_signals(procs) as received:
        for n, env in enumerate(env_per_run, 1):
            if received:
                break
            command = matrix_command(pytest_args, os.path.join(out_dir, f"run-{n}"))
            pinned = f" ({', '.join(f'{k}={v}' for k, v in env.items())})" if env else ""
            print(f"run {n}: {' '.join(shlex.quote(c) for c in command)}{pinned}", flush=True)
            began = time.perf_counter()
            log = open(os.path.join(out_dir, f"run-{n}.log"), "w") if concurrent else None  # outputs would interleave
            procs.append(start_matrix(command, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT if log else None))
            if log:
                log.close()  # the run has its own copy of the descriptor
            if not concurrent:
                print(f"run {n}: pytest exit {procs[-1].wait()} in {time.perf_counter() - began:.0f} s", flush=True)
        for n, proc in enumerate(procs, 1):
            if concurrent:
                print(f"run {n}: pytest exit {proc.wait()} (log: run-{n}.log)", flush=True)
    if received:
        print(f"repeat: {', '.join(received)}; comparing the cells the runs finished", file=sys.stderr, flush=True)
    command = "python -m harness repeat --runs {} {}{}".format(count, "--concurrent " if concurrent else "", " ".join(map(shlex.quote, pytest_args)))
    made = [path for n in range(1, count + 1) if (path := results_written(os.path.join(out_dir, f"run-{n}"), started))]
    return compare_files(made, out_dir, command)


def _workers(pytest_args: list[str]) -> int | None:
    """The -n the arguments give, where it is a number."""
    for n, arg in enumerate(pytest_args):
        value = pytest_args[n + 1] if arg in ("-n", "--numprocesses") and n + 1 < len(pytest_args) else (
            arg[2:] if arg.startswith("-n") and len(arg) > 2 else arg.split("=", 1)[1] if arg.startswith("--numprocesses=") else None)
        if value is not None:
            return int(value) if value.isdigit() else None
    return None


def compare_files(paths: list[str], out_dir: str, command: str | None = None) -> int:
    """Compare runs already made (say, on several machines of one kind) and write the same reports."""
    try:
        found = compare([(os.path.relpath(p, out_dir), load(p)) for p in paths])
    except ResultsError as exc:
        print(f"repeat: {exc}", file=sys.stderr)
        return 2
    for path in write(found, out_dir, command):
        print(path)
    print(f"repeat: {len(found.differing)} cells differ across {len(paths)} runs, {found.same} are the same in every run")
    return 1 if found.differing else 0

"""An autotuned case's configs compiled before its cells, in slices, side by side, by the workers themselves.

An autotuner compiles every config it times, for each new specialization of the sizes a cell draws (a size's
divisibility by 16, ...), and the cells of a case draw the same examples. On torchao's int8 matmul (27 configs) one cell
compiling them all took 184 s on one core; cells started side by side each compiled them again before any had written
the run's shared Triton cache (104-153 s a cell), and held back until one cell had, the run waited on that one core.

So where kernels are compiled (a GPU, not Triton's interpreter) and cells run side by side, the controller plans, once
the workers have collected, a few slices per autotuned case (`plan`, written to the run's folder: `write_plan`), and
each worker runs its share of them (`mine`: the n-th slice falls to worker n modulo the workers) before its first
cell. A slice is a runner process (harness.processes.runner, forked from the run's zygote, in the runners' environment)
that runs the case's first eager cell, and its first train_eager cell (the backward's kernels), with each autotuner
trying only its slice of the configs it would time (every `count`-th from `index`), each config run once rather than
timed (Autotuner.prune_configs and do_bench, patched in that process alone, `keep_slice`). Together the slices compile
each config once, on as many cores, into the run's Triton cache, which the cells share as they always have; what the
slices' cells find is thrown away (they time a slice of the configs, not what a cell checks). Each says what it did in
a file of the run's folder, which the controller reads into the run's prebuilt builds (`said`).

No worker waits for a slice: the slices are the first work of the workers they fall to, side by side, and the others run
cells meanwhile. The case's own cells are dealt after every other until its slices have all ended (`unfinished`), then
take their places in the run's order (harness.plugin.dealing): held last to the end, a case's longest cells started
last and ended the run late (FlagGems's layer norm beside its silu_and_mul on one H200: 166 s with compile-ahead, 152 s
without). A cell of the case dealt while its slices still run compiles for itself what they have not yet written, as it
would without them: a run compiling ahead does no compile twice that a run without would not, and keeps no worker idle
while a cell could run.

What the cells see: compiled kernels in the run's Triton cache, the same entries a cell that came first would have
written (Triton keys them by the kernel's source, its specialization, its options and the compiler, not by who compiled
them). Nothing else of a slice reaches them: its HOME and XDG_CACHE_HOME are its own folder, so a library's own store
of tuned configs (FlagGems keeps its timings under ~/.flaggems) never holds a slice's choice among a few configs. A
compile that fails in a slice is not cached: the cells meet it again and record it. A slice that fails or hangs only
leaves the compiling to the cells (it is ended after TIMEOUT_S).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Collection, ContextManager, Iterable, Iterator, Mapping

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.outcome import Fault, Outcome
from harness.model.rows import Row
from harness.model.settings import Settings
from harness.processes import profiling
from harness.processes.runner import Runner

SLICE_ENV = "TCM_COMPILE_AHEAD_SLICE"  # "index/count" in a slice's runner process (keep_slice)
REPLAYED = (Row.EAGER, Row.TRAIN_EAGER)  # the rows a slice runs: what launches the case's kernels, and its backward's, as eager code does
# How long a slice may take before it is ended and its worker goes on to its cells (the case's cells compile for
# themselves what it had not). Slices that paid for themselves took 13-18 s (the built-in cases' 3 configs) and
# 47-100 s (torchao's 27, in 16 or 4 slices) on one H200; Cut Cross-Entropy's, whose autotuning waits on the GPU
# rather than compiling, were still running at 230-300 s.
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Slice:
    """One process's part of an autotuned case's configs: every `count`-th config from `index`, for `cells`."""

    case: str
    index: int
    count: int
    cells: tuple[Cell, ...]

    @property
    def name(self) -> str:
        return f"{self.case} {self.index + 1}/{self.count}"


def plan(cells: Iterable[Cell], autotuners: Mapping[str, Collection[Any]], workers: int, carried: Collection[str] = ()) -> list[Slice]:
    """The slices for the cells to run (in the run's order): for each case of `autotuners` (its autotuners, by case) with
    at least two cells that launch its kernels, its first cell of each REPLAYED row, in as many slices as the run's
    `workers` shared among those cases give it (each worker one slice where there are as many cases as workers or
    fewer), and no more than its autotuners' largest number of configs."""
    replayed: dict[str, dict[Row, Cell]] = {}
    launching: dict[str, int] = {}
    for cell in cells:
        if cell.case not in autotuners or cell.wrapping is Wrapping.CONTROL or cell.id in carried:
            continue
        launching[cell.case] = launching.get(cell.case, 0) + 1
        if cell.row in REPLAYED:
            replayed.setdefault(cell.case, {}).setdefault(cell.row, cell)
    chosen = {case: tuple(rows.values()) for case, rows in replayed.items() if launching[case] > 1}
    share = max(1, workers // max(1, len(chosen)))
    slices: list[Slice] = []
    for case, replay in chosen.items():
        count = max(1, min(share, max((len(a.configs) for a in autotuners[case]), default=1)))
        slices.extend(Slice(case, index, count, replay) for index in range(count))
    return slices


def keep_slice() -> None:
    """In a slice's runner (SLICE_ENV set), before its cells: each autotuner of the process times, and so compiles, only
    its slice of the configs it would time (at least one: with fewer configs than slices, a config is compiled twice),
    and runs each of them once instead of timing it: a slice is there to compile them, and an autotuner whose kernels
    take long on the GPU (Cut Cross-Entropy's, CCE_AUTOTUNE=1: its eager cells waited on the GPU 150 s of 167 s) kept
    its slices timing, and the cells waiting, for minutes."""
    given = os.environ.get(SLICE_ENV)
    if not given:
        return
    index, count = (int(part) for part in given.split("/"))
    from triton.runtime.autotuner import Autotuner

    pruned = Autotuner.prune_configs

    def sliced(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
        configs = list(pruned(self, *args, **kwargs))
        return configs[index::count] or configs[index % len(configs):][:1]

    Autotuner.prune_configs = sliced
    # Where an autotuner's benchmarker is kept (Triton's do_bench, or the one it was given): read at each timing, set by
    # no version's constructor that names it otherwise, but a setter all the same, so that one that did still works.
    Autotuner.do_bench = property(lambda self: _run_once, lambda self, value: None)


def _run_once(kernel_call: Any, quantiles: Any = None, **kwargs: Any) -> Any:
    """A slice's timing of a config: it runs once, which compiles it, and every config times the same."""
    kernel_call()
    return [1.0] * len(quantiles) if quantiles else 1.0


# -- the controller's plan and the workers' slices -------------------------------------------------------------------


PLAN = "plan.json"


def write_plan(folder: str, slices: list[Slice]) -> None:
    """The run's slices, in the run's `folder`, for its workers to read before their first cell (the controller writes it
    once the first worker has collected, before any cell is dealt)."""
    os.makedirs(folder, exist_ok=True)
    pieces = [{"case": s.case, "index": s.index, "count": s.count, "cells": [c.id for c in s.cells]} for s in slices]
    with open(os.path.join(folder, PLAN + ".tmp"), "w") as f:
        json.dump(pieces, f)
    os.replace(os.path.join(folder, PLAN + ".tmp"), os.path.join(folder, PLAN))


def mine(folder: str, worker: int, workers: int) -> list[Slice]:
    """The slices that fall to the `worker`-th of `workers`: the n-th, and every `workers`-th after it."""
    try:
        with open(os.path.join(folder, PLAN)) as f:
            pieces = json.load(f)
    except FileNotFoundError:  # the run compiles nothing ahead
        return []
    return [Slice(p["case"], p["index"], p["count"], tuple(Cell.parse(c) for c in p["cells"]))
            for n, p in enumerate(pieces) if n % max(1, workers) == worker]


def run_slice(piece: Slice, case_modules: list[str], env: dict[str, str], settings: Settings, folder: str, zygote: str | None,
              worker: str, interrupted: Callable[[Callable[[], None]], ContextManager[None]] | None = None) -> dict[str, Any]:
    """Run one slice in a runner process of its own, at most TIMEOUT_S, and say what it did in the run's `folder`
    ({"seconds", "cpu_s", "error", "worker"}; `said` reads them); `interrupted` wraps each cell's run as the worker's
    interrupts do."""
    began, cpu, error = time.monotonic(), 0.0, None
    try:
        workdir = tempfile.mkdtemp(prefix=f"slice-{piece.case}-{piece.index}-", dir=folder)
        env = {**{k: v for k, v in env.items() if k != profiling.DIR_ENV},  # a slice's samples are no cell's
               SLICE_ENV: f"{piece.index}/{piece.count}", "HOME": workdir, "XDG_CACHE_HOME": os.path.join(workdir, "cache")}
        with Runner(case_modules, workdir, env=env, cells_per_process=0, standby=False, zygote=zygote) as runner:
            deadline = began + TIMEOUT_S
            for cell in piece.cells:
                left = deadline - time.monotonic()
                if left <= 0:
                    error = f"took over {TIMEOUT_S:.0f} s: stopped, and the cells compiled for themselves"
                    break
                with (interrupted or _undeferred)(runner.interrupt):
                    result = runner.run(cell, dataclasses.replace(settings, workdir=workdir), left)
                cpu += result.timings.cpu or 0.0
                if result.fault is Fault.HARNESS or result.outcome in (Outcome.CRASH, Outcome.TIMEOUT):
                    error = f"{cell.id}: {result.outcome.value}: {((result.message or '').splitlines() or [''])[0][:300]}"
                    break
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - a slice that fails leaves the compiling to the cells
        error = f"{type(exc).__name__}: {exc}"
    said = {"seconds": round(time.monotonic() - began, 2), "cpu_s": round(cpu, 2), "error": error, "worker": worker}
    with open(os.path.join(folder, f"{piece.case}.{piece.index}.said.json"), "w") as f:
        json.dump({"case": piece.case, "index": piece.index, "count": piece.count, **said}, f)
    return said


@contextlib.contextmanager
def _undeferred(instead: Callable[[], None]) -> Iterator[None]:
    yield


def unfinished(folder: str, slices: Iterable[Slice]) -> frozenset[str]:
    """The cases of `slices` with a slice that has not yet said what it did in the run's `folder` (still running, or not
    begun)."""
    return frozenset(s.case for s in slices if not os.path.exists(os.path.join(folder, f"{s.case}.{s.index}.said.json")))


def said(folder: str) -> list[dict[str, Any]]:
    """By case (its name as "case"), as the run's prebuilds say theirs ({"build", "seconds", "cpu_s", "error"}): its
    slices' longest seconds, their cells' CPU, the first error; slices that never said, as such (their worker stopped
    before them, or is still running them)."""
    try:
        with open(os.path.join(folder, PLAN)) as f:
            planned = json.load(f)
    except FileNotFoundError:
        return []
    by_case: dict[str, list[dict[str, Any]]] = {}
    for piece in planned:
        path = os.path.join(folder, f"{piece['case']}.{piece['index']}.said.json")
        try:
            with open(path) as f:
                item: dict[str, Any] | None = json.load(f)
        except (OSError, ValueError):
            item = None
        by_case.setdefault(piece["case"], []).append(item or {"seconds": None, "cpu_s": 0.0, "error": "never ended: its worker stopped first"})
    out = []
    for case, items in by_case.items():
        errors = [s["error"] for s in items if s["error"]]
        seconds = [s["seconds"] for s in items if s["seconds"] is not None]
        out.append({"build": f"compile_ahead {case} ({len(items)} slices)", "case": case, "seconds": max(seconds, default=None),
                    "cpu_s": round(sum(s["cpu_s"] for s in items), 2), "error": errors[0] if errors else None})
    return out

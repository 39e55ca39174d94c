"""Confirmation: every run proves that what it did for speed changed no outcome.

Cells share runner processes for speed (--cells-per-process), and a process that served other cells is not a new
interpreter: a library's own state (FlagGems's LibEntry keeps the kernels it launched for the life of the process) can
change what the next cell does, and no reset between cells reaches every library's state. So the run checks itself:
each cell that did not pass, and a sample of the passing ones (--confirm), runs again alone as soon as its worker is
free, in a runner process of its own (forked as every runner is), with empty compile caches and AOTInductor packages of
its own, from the same cell request: the same code its worker ran, not a second implementation.

Where the two agree (the outcome, and for a failure its stage and exception type: Attempt.signature) the cell keeps its
shared result, confirmed. Where they differ, the cell is charted as it ran alone, which is its program's outcome, and
its case is marked (a file in the run's folder): every later cell of that case runs alone, in every worker, and at the
end the controller runs alone those of its cells that ran shared before the mark. The reports say how many cells were
confirmed, how many agreed, and which cases and cells differed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import queue
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable, ContextManager, Iterable, Iterator

import pytest

from harness.environment.machine import RECORDS_ENV
from harness.model.cell import Cell
from harness.model.outcome import Attempt, CellResult, Confirmation, Confirmed, Outcome
from harness.model.rows import parse_timeouts, timeout_for
from harness.model.settings import PROFILES, Settings
from harness.plugin.options import case_specs, profile_name, run_caches, run_runner_template, run_zygote
from harness.processes.runner import INDUCTOR_CACHE, Runner, runner_env

# --confirm's default (its choices: harness.plugin.options): with a GPU every cell that did not pass and a sample of the
# passing ones; on Triton's CPU interpreter, whose chart tests the harness, one cell in ten whatever its outcome, so that
# CI's run on 2 cores stays within its time (its 400 failing cells, each again alone, would add minutes).
DEFAULT, INTERPRETER_DEFAULT = "sample", "tenth"
# One passing cell in SAMPLE_ONE_IN runs again alone, chosen by its id's digest: the same cells on every run (a
# chart's confirmation is repeatable), spread evenly over the rows, styles and cases, whichever of them a run selects;
# but not one that took over SAMPLE_LONGEST_S shared. Run alone right after it, with empty caches, such a cell ran twice
# as long again on its worker and set the run's end (FlagGems's layer norm, train_compile_default: 63 s shared, then
# 136 s alone, where the run's other workers had ended at 185 s: 295 s). Its row, style and case are sampled in cells
# that took less: a leak of a library's state reaches them as well.
SAMPLE_ONE_IN = 10
SAMPLE_LONGEST_S = 30.0


def sampled(cell: Cell) -> bool:
    """Whether a cell is in every run's sample: one in SAMPLE_ONE_IN, by the digest of its id."""
    return int.from_bytes(hashlib.sha256(cell.id.encode()).digest()[:4], "big") % SAMPLE_ONE_IN == 0


def why_confirmed(policy: str, result: CellResult) -> Confirmed | None:
    """Why this cell runs again alone under --confirm=`policy`, or None. A skipped cell ran no case code, and a cell
    carried over from a baseline did not run."""
    if policy == "none" or result.outcome is Outcome.SKIPPED or result.carried_from is not None:
        return None
    if policy == "tenth":
        return (Confirmed.SAMPLED if result.outcome is Outcome.PASS else Confirmed.NOT_PASSED) if sampled(result.cell) else None
    if result.outcome is not Outcome.PASS:
        return Confirmed.NOT_PASSED
    if policy == "all" or (policy == "sample" and sampled(result.cell) and result.timings.wall <= SAMPLE_LONGEST_S):
        return Confirmed.SAMPLED
    return None


def settled(shared: CellResult, alone: CellResult, why: Confirmed) -> CellResult:
    """The cell as the chart keeps it: its shared result where the run alone agrees, else its result alone. Its timings stay
    those of its run in the shared process either way (the run's figures count the run alone as the confirmation's)."""
    agreed = Attempt.of(shared).signature == Attempt.of(alone).signature
    spent = Confirmation.spending(alone.timings)
    confirmation = Confirmation(why, Attempt.of(alone), Attempt.of(shared), agreed, alone.timings.wall, spent)
    return dataclasses.replace(shared if agreed else alone, confirmation=confirmation, timings=shared.timings)


def ran_alone(alone: CellResult) -> CellResult:
    """A cell of a case that runs alone, which never ran shared."""
    return dataclasses.replace(alone, confirmation=Confirmation(Confirmed.CASE_ALONE, Attempt.of(alone)))


def policy(config: pytest.Config) -> str:
    """--confirm, else its default here."""
    chosen = config.getoption("confirm")
    if chosen:
        return chosen
    import torch  # here, not at the top: the torch-free tools import the plugin's names

    return DEFAULT if torch.cuda.is_available() else INTERPRETER_DEFAULT


def cases_alone(folder: str) -> dict[str, str]:
    """The cases whose cells run alone, each with the cell that differed first: a file each in `folder`
    (harness.plugin.options.alone_folder), named by the case, holding the cell's id."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return {}
    found = {}
    for name in names:
        try:
            with open(os.path.join(folder, name)) as f:
                found[name] = f.read().strip()
        except OSError:
            continue
    return found


def mark_alone(folder: str, cell: Cell) -> None:
    """From now on, every cell of `cell`'s case runs alone (the first cell that differed is the one named)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, cell.case)
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(cell.id)


def runs_alone(folder: str, cell: Cell) -> bool:
    return os.path.exists(os.path.join(folder, cell.case))


class Alone:
    """Runs cells alone for one process of the run (a worker, or a thread of the controller at the end): each in a new
    runner process with compile caches of its own, empty (Runner's own_caches), and a folder and AOTInductor packages of
    its own, removed after it. The next such process is started while a cell runs (the runner's standby), so a cell
    confirmed alone does not wait for a process to start: CUDA's start alone took a median 4 s a process on the GPU runner
    with 16 workers. One standby, not two: cells that fail in a moment still wait for the next (FlagGems's layer norm and
    silu_and_mul on one H200, 16 workers: 321 s of 744 s confirming 158 cells), but two halved that wait and cost the
    shared cells more, importing the library and starting CUDA on cores they were using (their work 1,283 s, then 1,689 s;
    the workers ended at 175-185 s, then 202-214 s)."""

    def __init__(self, config: pytest.Config, name: str, workers: int):
        self.config, self.name = config, name
        self.workdir = tempfile.mkdtemp(prefix=f"tcm-alone-{name}-")
        # Not profiled (--profile-dir): where the run's time went is its cells', and a run alone is the confirmation's.
        env = runner_env(self.workdir, name, None, workers=workers, perf=config.getoption("perf"))
        # The machine's answers the run recorded (its Inductor CPU ISA probe: 26 s on the GPU runner), not a compile's.
        env[RECORDS_ENV] = os.path.join(run_caches(config), INDUCTOR_CACHE)
        self.runner = Runner(case_specs(config), self.workdir, env=env, cells_per_process=1, zygote=run_zygote(config),
                             template=run_runner_template(config), own_caches=True, timeouts=parse_timeouts(config.getoption("cell_timeout")))

    def prepare(self) -> None:
        """Start the first runner process now, before any cell asks for it."""
        self.runner.prepare()

    def run(self, cell: Cell, timeout: float, deferred: Callable[[Callable[[], None]], ContextManager[None]] | None = None) -> CellResult:
        """The cell's result alone; `deferred` wraps the run so that an interrupt ends it (the worker's interrupts)."""
        config = self.config
        folder = tempfile.mkdtemp(prefix="cell-", dir=self.workdir)
        try:
            # Its own packages: an AOTInductor package another cell built would not be this cell's build. The run's caches
            # still hold the C++ runtime's runner, the harness's own program, not a compile the chart checks.
            settings = Settings(profile=PROFILES[profile_name(config)], workdir=folder, perf=config.getoption("perf"),
                                packages=os.path.join(folder, "packages"), caches=run_caches(config))
            with (deferred or _undeferred)(self.runner.interrupt):
                result = self.runner.run(cell, settings, timeout)
            result.worker = self.name
            return result
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        self.runner.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _undeferred(interrupt: Callable[[], None]) -> ContextManager[None]:
    return contextlib.nullcontext()


def still_shared(results: Iterable[CellResult], cases: Iterable[str]) -> list[CellResult]:
    """The cells of these cases that ran only in a shared process: the controller runs them alone at the end."""
    cases = set(cases)
    return [r for r in results if r.case in cases and r.confirmation is None and r.carried_from is None
            and r.outcome is not Outcome.SKIPPED]


@dataclasses.dataclass
class CasesAlone:
    """What the controller's runs alone at the end gave: each cell's result settled against its shared one, the cells
    that could not run alone (they keep their shared results, unconfirmed), and whether Ctrl-C stopped them."""

    settled: dict[Cell, CellResult] = dataclasses.field(default_factory=dict)
    not_run: list[str] = dataclasses.field(default_factory=list)
    interrupted: bool = False


def run_cases_alone(config: pytest.Config, cells: list[CellResult], threads: int) -> CasesAlone:
    """`cells` (their shared results) run alone side by side, `threads` at a time as the workers ran them, each thread with
    a runner of cells alone; Ctrl-C ends the cells running and starts no other."""
    timeouts = parse_timeouts(config.getoption("cell_timeout"))
    done = CasesAlone()
    idle: queue.SimpleQueue[Alone] = queue.SimpleQueue()  # one runner of cells alone for each thread
    alones = [Alone(config, f"controller-{n}", threads) for n in range(threads)]
    for alone in alones:
        idle.put(alone)
    running: set[Any] = set()  # each cell's runner's interrupt, while it runs

    @contextlib.contextmanager
    def deferred(interrupt: Any) -> Iterator[None]:
        running.add(interrupt)
        try:
            yield
        finally:
            running.discard(interrupt)

    def run_alone(cell: Cell) -> CellResult:
        alone = idle.get()
        try:
            return alone.run(cell, timeout_for(cell.row, timeouts), deferred)
        finally:
            idle.put(alone)

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tcm-alone") as pool:
        futures = {pool.submit(run_alone, shared.cell): shared for shared in cells}
        try:
            for future in as_completed(futures):
                shared = futures[future]
                try:
                    done.settled[shared.cell] = settled(shared, future.result(), Confirmed.CASE_ALONE)
                except Exception as exc:  # noqa: BLE001 - the harness's own failure: the cell keeps its shared result, unconfirmed
                    done.not_run.append(f"{shared.cell.id} could not run alone: {type(exc).__name__}: {exc}")
        except KeyboardInterrupt:
            done.interrupted = True
            pool.shutdown(wait=False, cancel_futures=True)
            for interrupt in list(running):
                interrupt()
    for alone in alones:
        alone.close()
    return done

"""The role of a process that runs cells (an xdist worker, or a run without workers)."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import tempfile
from importlib.metadata import entry_points
from typing import Any, Callable, ContextManager

import pytest

from harness.execution import compile_ahead
from harness.model.cell import Cell
from harness.model.outcome import CellResult
from harness.model.results import load
from harness.model.rows import parse_timeouts, timeout_for
from harness.model.settings import PROFILES, Settings
from harness.plugin import carry_over, confirmation
from harness.plugin.interrupts import OnceInterrupted
from harness.plugin.options import (
    WORKER,
    alone_folder,
    carried_cells,
    case_specs,
    cells_per_process,
    compiling_ahead_folder,
    interrupted_folder,
    loaded,
    profile_name,
    run_caches,
    run_packages,
    run_runner_template,
    run_zygote,
)
from harness.plugin.status import attach
from harness.processes.runner import Runner, runner_env
from harness.reporting.diff import accept_command, against_baseline


class MatrixWorker:
    """The role of a process that runs cells: it owns this process's runner (started on first use) and
    checks each result against the baseline, when there is one."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self._runner: Runner | None = None
        self._alone: confirmation.Alone | None = None
        self._baseline: dict[Cell, CellResult] | None = None
        self._sliced = False  # whether this worker has run its compile-ahead slices
        self._baseline_run = ""  # how a cell carried over from the baseline names it (carry_over.source_run)
        # Every process of the run stops on the first Ctrl-C only; an xdist worker as its controller tells it.
        # (An xdist worker is told by its config: PYTEST_XDIST_WORKER is inherited by a run a test starts.)
        xdist_worker = hasattr(config, "workerinput")
        self.interrupts = OnceInterrupted.install(raises=not xdist_worker, acknowledge=self._acknowledge_interrupt if xdist_worker else None)

    def _acknowledge_interrupt(self) -> None:
        """Tell the controller this worker, interrupted, has nothing running: its cell in flight ended, its runner gone."""
        try:
            folder = interrupted_folder(self.config)
            os.makedirs(folder, exist_ok=True)
            open(os.path.join(folder, str(os.getpid())), "w").close()
        except OSError:  # the run's folder gone: the controller waits its limit, then writes the reports all the same
            pass

    @staticmethod
    def of(config: pytest.Config) -> MatrixWorker | None:
        """This process's worker role; None when the run did not ask for the matrix."""
        return config.pluginmanager.get_plugin(WORKER)

    # Which worker this is and how many the run has, from xdist's word to this process, not from PYTEST_XDIST_WORKER*:
    # a run without workers that a pytest worker started (a test suite's) inherits those of the worker that started it,
    # and its runners would get another run's threads and be refused by its zygote, whose environment has its own.
    @property
    def name(self) -> str:
        """This worker's xdist id (gw0, ...); `main` in a run without workers."""
        workerinput = getattr(self.config, "workerinput", None)
        return workerinput["workerid"] if workerinput else "main"

    @property
    def count(self) -> int:
        """How many workers the run has; 1 without workers."""
        workerinput = getattr(self.config, "workerinput", None)
        return workerinput["workercount"] if workerinput else 1

    @property
    def cases(self) -> dict[str, Any]:
        return loaded(self.config).cases

    @property
    def alone(self) -> confirmation.Alone:
        """This worker's runner of cells alone (harness.plugin.confirmation), started with its runner."""
        if self._alone is None:
            self._alone = confirmation.Alone(self.config, self.name, self.count)
        return self._alone

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            worker = self.name
            workdir = tempfile.mkdtemp(prefix=f"tcm-{worker}-")
            env = runner_env(workdir, worker, run_caches(self.config), workers=self.count, perf=self.config.getoption("perf"),
                             profile_dir=self.config.getoption("profile_dir"))
            self._runner = Runner(case_specs(self.config), workdir, env=env,
                                  cells_per_process=cells_per_process(self.config) or None, zygote=run_zygote(self.config),
                                  template=run_runner_template(self.config), timeouts=parse_timeouts(self.config.getoption("cell_timeout")))
            if confirmation.policy(self.config) != "none":  # its first process starts beside the runner's, not when a cell waits
                self.alone.prepare()
        return self._runner

    def run(self, cell: Cell, item: pytest.Item) -> CellResult:
        """Run a cell in the runner, or carry it over from the baseline where the controller said so, and attach its
        result to the test's report, for the controller."""
        config = self.config
        if cell.id in self.carried:
            result = carry_over.carry(self.baseline()[cell], self._baseline_run)
            attach(item, result)
            return result
        if not self._sliced:  # this worker's share of the autotuned cases' configs, compiled ahead before its first cell
            self._sliced = True
            self._compile_ahead()
        settings = Settings(profile=PROFILES[profile_name(config)], workdir=self.runner.workdir, perf=config.getoption("perf"),
                            packages=run_packages(config), caches=run_caches(config))
        timeout = timeout_for(cell.row, parse_timeouts(config.getoption("cell_timeout")))
        if confirmation.runs_alone(alone_folder(config), cell):  # another cell of its case differed alone
            result = confirmation.ran_alone(self.alone.run(cell, timeout, self._deferred))
        else:
            with self._deferred(self.runner.interrupt):
                result = self.runner.run(cell, settings, timeout)
            result.worker = self.name
            why = confirmation.why_confirmed(confirmation.policy(config), result)
            if why is not None:  # at once, while this worker is free: the cell again, alone
                result = confirmation.settled(result, self.alone.run(cell, timeout, self._deferred), why)
                if result.confirmation and result.confirmation.agreed is False:
                    confirmation.mark_alone(alone_folder(config), cell)
        attach(item, result)
        return result

    def _compile_ahead(self) -> None:
        """Run the slices of the run's compile-ahead plan that fall to this worker (harness.execution.compile_ahead)."""
        config, folder = self.config, compiling_ahead_folder(self.config)
        index = int("".join(ch for ch in self.name if ch.isdigit()) or 0)
        pieces = compile_ahead.mine(folder, index, self.count)
        if not pieces:
            return
        env = runner_env(folder, self.name, run_caches(config), workers=self.count,
                         perf=config.getoption("perf"))
        settings = Settings(profile=PROFILES[profile_name(config)], workdir=folder, packages=run_packages(config), caches=run_caches(config))
        for piece in pieces:
            compile_ahead.run_slice(piece, case_specs(config), env, settings, folder, run_zygote(config), self.name, self._deferred)

    def _deferred(self, instead: Callable[[], None]) -> ContextManager[None]:
        """Ctrl-C ends the cell in flight (`instead` kills its runner), and the cell is then not reported (the run records
        it as never reported); in a process without the handler, nothing is deferred."""
        return self.interrupts.deferred(instead) if self.interrupts is not None else contextlib.nullcontext()

    @functools.cached_property
    def carried(self) -> frozenset[str]:
        """The ids of the cells to carry over from the baseline, as the controller decided them."""
        return carried_cells(self.config)

    def baseline_change(self, result: CellResult) -> str | None:
        """Why a cell fails the --baseline check, or None (always None without --baseline, or with --accept)."""
        path = self.config.getoption("baseline")
        if path is None or self.config.getoption("accept"):
            return None
        return against_baseline(self.baseline().get(result.cell), result, self.accepting_command)

    def baseline(self) -> dict[Cell, CellResult]:
        """The --baseline run's results by cell, read once."""
        if self._baseline is None:
            path = self.config.getoption("baseline")
            results = load(path)
            self._baseline, self._baseline_run = results.by_cell(), carry_over.source_run(results, path)
        return self._baseline

    @functools.cached_property
    def accepting_command(self) -> str:
        """The command that accepts this run's outcomes: its own arguments again, with --accept. xdist hands its
        workers the arguments the run was started with, so a worker names the same command as a run without workers."""
        # The console script exists where the plugin's entry point does, as harness.tools.launch decides for `run`.
        installed = any(ep.value == "harness.plugin" for ep in entry_points(group="pytest11"))
        return accept_command([str(arg) for arg in self.config.invocation_params.args], installed)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # Put back in a process that goes on (pytest run in-process); an xdist worker keeps it while it ends, so a
        # Ctrl-C then is not raised in whatever its teardown runs.
        if self.interrupts is not None and not hasattr(config, "workerinput") and signal.getsignal(signal.SIGINT) is self.interrupts:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        alone, self._alone = self._alone, None
        if alone is not None:
            alone.close()
        runner, self._runner = self._runner, None
        if runner is None:
            return
        runner.close()
        logs = config.getoption("runner_logs")
        if logs:
            os.makedirs(logs, exist_ok=True)
            for n, log in enumerate(runner.logs()):
                shutil.copy(log, os.path.join(logs, f"runner-{self.name}-{n}.log"))
        shutil.rmtree(runner.workdir, ignore_errors=True)


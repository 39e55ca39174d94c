"""The pytest side: one test item per cell, run in an isolated runner process per pytest worker.

Roles follow pytest-cov and xdist's dsession, one class each, one method per pytest event:
- `MatrixWorker`, in every process that runs cells (an xdist worker, or a run without workers), owns the
  runner process, runs each cell there and attaches its result to the test report;
- `MatrixController`, in the process that started the run, collects the reports, notices workers that
  died, and alone writes the reports, once, at the end of the session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from typing import Any, Iterator

import pytest

from harness import registry
from harness.cell import Cell, all_cells
from harness.errors import UsageError
from harness.outcome import CellResult, Outcome
from harness.rows import Path, parse_timeouts, timeout_for
from harness.runner import INDUCTOR_CACHE, Runner, runner_env, runner_threads
from harness.settings import DEFAULT_PROFILE, PROFILES, Settings

RESULT_PROPERTY = "tcm_result"
WORKER, CONTROLLER = "tcm-worker", "tcm-controller"

# Seconds-like units, as a row's cost: the autotuner's cost per config it times, over a cell's examples.
AUTOTUNE_COST_PER_CONFIG = 20.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("triton-compat-matrix")
    group.addoption("--cases", action="append", default=None, metavar="MODULE_OR_FILE",
                    help="case module, package or .py file (repeatable); default: the built-in `cases` package")
    group.addoption("--report-dir", default="reports", help="where SUPPORT.md, MATRIX.md and results.json go (default: reports)")
    group.addoption("--matrix-profile", default=None, choices=sorted(PROFILES),
                    help=f"how many hypothesis examples a cell checks (default: {DEFAULT_PROFILE}, or ci when CI is set)")
    group.addoption("--cell-timeout", action="append", default=[], metavar="[ROW=]S",
                    help="seconds a cell may take: S for every cell, ROW=S for a path or kind (aoti=1800); repeatable")
    group.addoption("--cells-per-process", type=int, default=0,
                    help="replace the runner process after this many cells (1: a fresh process per cell; 0: only after a fault)")
    group.addoption("--cache-dir", default=None, metavar="DIR",
                    help="reuse the Inductor and Triton compile caches in DIR, kept between runs "
                         "(default: fresh caches for every run, so an old cache cannot hide a compile failure)")
    group.addoption("--runner-logs", default=None, metavar="DIR", help="keep each runner process's log in DIR (runner-WORKER-N.log)")
    group.addoption("--perf", action="store_true",
                    help="time each passing cell's artifact on the case's benchmark input (triton.testing.do_bench); "
                         "run without -n, so cells do not share the GPU")
    group.addoption("--baseline", default=None, metavar="RESULTS_JSON",
                    help="fail a cell whose outcome differs from this earlier run's (regressed, improved or failing differently)")
    group.addoption("--accept", action="store_true", help="with --baseline: rewrite the baseline with this run's outcomes")


def _names_the_matrix(config: pytest.Config) -> bool:
    """Do the run's arguments name the matrix's test file or a directory holding it?"""
    matrix = config.rootpath / "tests" / "test_matrix.py"
    named = [config.invocation_params.dir.joinpath(arg.split("::")[0]).resolve() for arg in config.args]
    return any(path == matrix or path in matrix.parents for path in named)


def _runs_cells_here(config: pytest.Config) -> bool:
    """Will this process run matrix cells: a worker, or a run without workers, of the matrix?"""
    if config.option.collectonly or (not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None)):
        return False
    return _names_the_matrix(config)


def profile_name(config: pytest.Config) -> str:
    chosen = config.getoption("matrix_profile")
    return chosen or ("ci" if os.environ.get("CI") else DEFAULT_PROFILE)


def case_specs(config: pytest.Config) -> list[str]:
    return config.getoption("cases") or [registry.BUILTIN]


def pytest_configure(config: pytest.Config) -> None:
    try:
        parse_timeouts(config.getoption("cell_timeout"))
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.getoption("perf") and (config.getoption("numprocesses", None) or config.getoption("dist", "no") != "no"):
        raise pytest.UsageError("--perf times kernels: run it without -n (pytest --perf), so no other cell shares the GPU")
    config.pluginmanager.register(MatrixWorker(config), WORKER)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(MatrixController(config), CONTROLLER)
        if getattr(config.option, "maxschedchunk", False) is None:
            # xdist otherwise deals each worker a run of consecutive cells: with the costliest first, one
            # worker would get seven AOTInductor cells. One at a time keeps the longest-first order.
            config.option.maxschedchunk = 1
    if _runs_cells_here(config):
        # The runner imports torch and starts CUDA while this process starts and collects.
        MatrixWorker.of(config).runner.prepare()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cell" in metafunc.fixturenames:
        cases = registry.load(case_specs(metafunc.config)).cases
        cells = all_cells(list(cases))
        metafunc.parametrize("cell", cells, ids=[c.id for c in cells])
        if cells:  # the matrix collected from arguments _runs_cells_here did not recognise
            MatrixWorker.of(metafunc.config).runner.prepare()


def _fresh_run_dir(config: pytest.Config) -> str:
    """The directory the controller made for this run, shared with its workers."""
    if hasattr(config, "workerinput"):
        return config.workerinput["tcm_run_caches"]
    return config.pluginmanager.get_plugin(CONTROLLER).run_caches


def run_caches(config: pytest.Config) -> str:
    """The compile caches this run's runners share: --cache-dir, or a directory made fresh for this run
    (one per run, not per worker: a worker's first compile need not redo what another did)."""
    chosen = config.getoption("cache_dir")
    return os.path.abspath(chosen) if chosen else _fresh_run_dir(config)


def run_packages(config: pytest.Config) -> str:
    """Where this run's AOTInductor packages are shared between its runners: always fresh, never the
    reused --cache-dir (a package from another run must not stand in for this run's build)."""
    return os.path.join(_fresh_run_dir(config), "aoti-packages")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Costliest cells first (a stable sort, the same on every worker): the last cells to start are short."""
    cases = registry.load(case_specs(config)).cases

    rows = list(Path)

    def cost(item: pytest.Item) -> tuple[float, int]:
        cell = getattr(item, "callspec", None) and item.callspec.params.get("cell")
        if not isinstance(cell, Cell) or cell.case not in cases:
            return 0.0, 0
        # The row's cost, plus the autotuning its case's kernels redo for each new input size. Among cells of
        # one cost, row by row: a strict export's AOTInductor cell and its non-strict twin, which often
        # compile the same program once between them, then start apart, not side by side with one waiting.
        return -(cell.path.spec.cost + AUTOTUNE_COST_PER_CONFIG * cases[cell.case].autotune_configs), rows.index(cell.path)

    items.sort(key=cost)


class MatrixWorker:
    """The role of a process that runs cells: it owns this process's runner (started on first use) and
    checks each result against the baseline, when there is one."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self._runner: Runner | None = None
        self._baseline: dict[Cell, CellResult] | None = None

    @staticmethod
    def of(config: pytest.Config) -> MatrixWorker:
        return config.pluginmanager.get_plugin(WORKER)

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
            workdir = tempfile.mkdtemp(prefix=f"tcm-{worker}-")
            env = runner_env(workdir, worker, run_caches(self.config), workers=worker_count())
            self._runner = Runner(case_specs(self.config), workdir, env=env,
                                  cells_per_process=self.config.getoption("cells_per_process") or None)
        return self._runner

    def run(self, cell: Cell, item: pytest.Item) -> CellResult:
        """Run a cell in the runner and attach its result to the test's report, for the controller."""
        config = self.config
        settings = Settings(**PROFILES[profile_name(config)], workdir=self.runner.workdir, perf=config.getoption("perf"),
                            packages=run_packages(config), caches=run_caches(config))
        timeout = timeout_for(cell.path, parse_timeouts(config.getoption("cell_timeout")))
        result = self.runner.run(cell, settings, timeout)
        result.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        item.user_properties.append((RESULT_PROPERTY, result.to_json()))
        return result

    def baseline_change(self, result: CellResult) -> str | None:
        """Why a cell fails the --baseline check, or None (always None without --baseline, or with --accept)."""
        path = self.config.getoption("baseline")
        if path is None or self.config.getoption("accept"):
            return None
        from harness.diff import against_baseline
        from harness.results import load

        if self._baseline is None:
            self._baseline = load(path).by_cell()
        return against_baseline(self._baseline.get(result.cell), result, path)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        runner.close()
        logs = config.getoption("runner_logs")
        if logs:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
            os.makedirs(logs, exist_ok=True)
            for n, log in enumerate(runner.logs()):
                shutil.copy(log, os.path.join(logs, f"runner-{worker}-{n}.log"))
        shutil.rmtree(runner.workdir, ignore_errors=True)


def worker_count() -> int:
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


@pytest.fixture
def run_cell(pytestconfig: pytest.Config, request: pytest.FixtureRequest) -> Any:
    """run_cell(cell) -> its CellResult, run by this process's MatrixWorker."""
    worker = MatrixWorker.of(pytestconfig)
    return lambda cell: worker.run(cell, request.node)


@pytest.fixture
def check_baseline(pytestconfig: pytest.Config) -> Any:
    """check_baseline(result) -> why it differs from the --baseline run, or None."""
    return MatrixWorker.of(pytestconfig).baseline_change


@contextlib.contextmanager
def signals_deferred() -> Iterator[list[str]]:
    """Ctrl-C and SIGTERM are noted, not obeyed, while the reports are written (seconds): a second
    interrupt, or a time limit that strikes then, must not lose the cells that ran."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signal.Signals(signum).name))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class MatrixController:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.results: dict[Cell, CellResult] = {}
        self.collected: set[Cell] = set()
        self.started = time.time()
        self.run_caches = tempfile.mkdtemp(prefix="tcm-caches-")
        self.stopped_by: str | None = None
        self._sigterm: Any = None
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            # A CI job's timeout or `kill` sends SIGTERM: stop as on Ctrl-C, so the cells that ran are reported.
            self._sigterm = signal.signal(signal.SIGTERM, self._terminated)

    def _terminated(self, signum: int, frame: Any) -> None:
        self.stopped_by = "SIGTERM"
        raise KeyboardInterrupt("SIGTERM")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["tcm_run_caches"] = self.run_caches

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._sigterm is not None:
            signal.signal(signal.SIGTERM, self._sigterm)
        shutil.rmtree(self.run_caches, ignore_errors=True)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected |= {cell for item in session.items if (cell := Cell.of_test(item.nodeid))}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.collected |= {cell for nodeid in ids if (cell := Cell.of_test(nodeid))}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cell = Cell.of_test(report.nodeid)
        if cell is None:
            return
        for name, value in report.user_properties:
            if name == RESULT_PROPERTY:
                self.results[cell] = CellResult.from_json(value)
        if report.failed and cell not in self.results:
            # No result came back: the pytest worker died (xdist reports it so), or the harness broke.
            text = str(report.longrepr or "")
            died = "crashed" in text or report.when == "???"
            self.results[cell] = CellResult(
                cell, Outcome.CRASH if died else Outcome.ERROR, fault=None if died else "harness",
                message=("the pytest worker running this cell died: " if died else "harness error: ")
                + (text.strip().splitlines() or [""])[-1][:300],
            )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:  # nothing ran: the reports of the last real run stay as they are
            return
        if not self.results and not self.collected and not _names_the_matrix(self.config):
            return
        with signals_deferred() as received:
            self._write_reports(session)
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if received and terminal:
            terminal.write_line(f"triton-compat-matrix: {', '.join(received)} arrived while the reports were written; they were finished first")

    def _write_reports(self, session: pytest.Session) -> None:
        # Read here, not from the workers: a -k selection, or every case broken, must not hide them.
        problems = registry.load(case_specs(self.config)).problems
        if problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        from harness import fingerprint, report
        from harness.results import Results

        import torch

        profile = profile_name(self.config)
        workers = getattr(self.config.option, "numprocesses", None)
        missing = sorted(cell.id for cell in self.collected - set(self.results))
        results = Results(
            fingerprint=fingerprint.collect(
                interpreter=not torch.cuda.is_available(),
                profile=profile,
                profile_settings=PROFILES[profile],
                workers=workers if isinstance(workers, int) else 1,
                caches=f"reused from {os.path.abspath(cache_dir)}" if (cache_dir := self.config.getoption("cache_dir")) else "fresh",
            ),
            cells=list(self.results.values()),
            complete=not missing,
            missing=missing,
            wall_time_s=round(time.time() - self.started, 1),
            problems=[p.to_json() for p in problems],
            interrupted=self._why_stopped(session) if missing else None,
        )
        from harness import vec_isa

        results.fingerprint["vec_isa"] = vec_isa.recorded(os.path.join(run_caches(self.config), INDUCTOR_CACHE))
        # CPU threads each runner's torch used (None: torch's default, one per core).
        results.fingerprint["runner_threads"] = runner_threads(results.fingerprint["workers"])
        written = report.write(results, self.config.getoption("report_dir"))
        baseline_notes = self._baseline(results)
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal:
            counts: dict[str, int] = {}
            for c in results.cells:
                key = "env" if c.blamed_on else c.outcome.value
                counts[key] = counts.get(key, 0) + 1
            summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            terminal.write_line(f"triton-compat-matrix: {len(results.cells)} cells ({summary}); wrote {', '.join(written)}")
            if missing:
                why = f" ({results.interrupted})" if results.interrupted else ""
                terminal.write_line(f"triton-compat-matrix: INCOMPLETE{why}, {len(missing)} cells never reported", red=True)
            for problem in problems:
                terminal.write_line(f"triton-compat-matrix: LEFT OUT {problem}", red=True)
            for note in baseline_notes:
                terminal.write_line(f"triton-compat-matrix: {note}")

    def _why_stopped(self, session: pytest.Session) -> str | None:
        if self.stopped_by:
            return self.stopped_by
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:
            return "interrupted (Ctrl-C)"
        if session.shouldstop:
            return f"stopped: {session.shouldstop}"
        return None

    def _baseline(self, results: Any) -> list[str]:
        """With --accept, rewrite the baseline (keeping its flaky marks); say which baseline cells did not run."""
        path = self.config.getoption("baseline")
        if path is None:
            return []
        from harness import results as results_file

        old = results_file.load(path) if os.path.exists(path) else None
        notes = []
        if old is not None:
            absent = sorted(cell.id for cell in set(old.by_cell()) - {c.cell for c in results.cells})
            if absent:
                notes.append(f"{len(absent)} baseline cells did not run: {', '.join(absent[:10])}")
        if self.config.getoption("accept"):
            flaky = {c.cell: c.flaky for c in old.cells if c.flaky} if old else {}
            for cell in results.cells:
                cell.flaky = flaky.get(cell.cell)
            results_file.save(results, path)
            notes.append(f"accepted this run's outcomes as the baseline {path}")
        return notes

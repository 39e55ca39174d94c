"""The pytest side: one test item per cell, run in an isolated runner process per pytest worker.

Installed, the plugin is loaded into every pytest run (a `pytest11` entry point) but only adds its options
until a run asks for the matrix with `--matrix` (`triton-compat-matrix run` is `pytest --matrix`): then it
adds the matrix's test module, shipped in the package (harness/plugin/matrix.py), to what the run collects.

Roles follow pytest-cov and xdist's dsession, one class each, one method per pytest event:
- `MatrixWorker`, in every process of a matrix run, owns the runner process where it runs cells (an xdist
  worker, or a run without workers), runs each cell there and attaches its result to the test report;
- `MatrixController`, in the process that started the run, collects the reports, says what the run will do
  and how far it got, notices workers that died, and alone writes the reports, once, at the end.

A cell's outcome is data, not a pass or fail of its test: `-v` shows it (WRONG, FAIL, CRASH, TIMEOUT, ENV,
SKIP), junit XML carries it in properties, and `--lf` reruns the cells that did not pass.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from typing import Any, Callable, Iterator

import pytest

from harness.authoring import registry
from harness.model.cell import Cell, all_cells
from harness.model.columns import Wrapping
from harness.model.errors import ResultsError, UsageError
from harness.model.outcome import CellResult, Outcome
from harness.model.rows import Row, parse_timeouts, timeout_for
from harness.model.settings import DEFAULT_PROFILE, INTERPRETER_PROFILE, PROFILES, Settings
from harness.plugin import estimate, shard
from harness.runner import INDUCTOR_CACHE, Runner, runner_env, runner_threads

MATRIX_MODULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "matrix.py")
WORKER, CONTROLLER, SHARD = "tcm-worker", "tcm-controller", "tcm-shard"
# The test report's properties (junit XML writes them as <property>): the whole result as JSON, and its
# outcome, stage and message on their own for tools that read one field.
RESULT_PROPERTY, OUTCOME_PROPERTY, STAGE_PROPERTY, MESSAGE_PROPERTY = "tcm_result", "tcm_outcome", "tcm_stage", "tcm_message"
DEFAULT_REPORT_DIR = "reports"
PARTIAL = "partial"  # where a run of part of the matrix writes, under the default report directory

# Seconds-like units, as a row's cost: the autotuner's cost per config it times, over a cell's examples.
AUTOTUNE_COST_PER_CONFIG = 20.0
PROGRESS_EVERY_S = 30.0  # how often the controller says how far the run got

# The options that only mean something to the matrix, with the value that says "not given".
_MATRIX_OPTIONS = {"cases": None, "report_dir": None, "matrix_profile": None, "cell_timeout": [], "cells_per_process": 0,
                   "cache_dir": None, "runner_logs": None, "perf": False, "baseline": None, "accept": False, "shard": None,
                   "shard_timings": None}
_LOADED = pytest.StashKey[registry.Loaded]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("triton-compat-matrix")
    group.addoption("--matrix", action="store_true",
                    help="run the matrix of cases x wrapping styles x compile paths (as `triton-compat-matrix run` does); "
                         "without it this plugin changes nothing")
    group.addoption("--cases", action="append", default=None, metavar="MODULE_OR_FILE",
                    help="case module, package or .py file (repeatable); default: the built-in cases (harness.cases)")
    group.addoption("--report-dir", default=None,
                    help=f"where SUPPORT.md, MATRIX.md and results.json go (default: {DEFAULT_REPORT_DIR}, or {DEFAULT_REPORT_DIR}/{PARTIAL} "
                         "for a run of part of the matrix, such as -k or --lf, so that it never overwrites a whole run's chart)")
    group.addoption("--matrix-profile", default=None, choices=sorted(PROFILES),
                    help="how many hypothesis examples a cell checks (default: matrix with a CUDA device, quick without one)")
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
    group.addoption("--shard", default=None, metavar="K/N",
                    help="run part K of N balanced parts of the cells (a CI job matrix: one runner a part, the same options "
                         "on each); `python -m harness report` merges the parts' results.json files. Default report "
                         f"directory: {DEFAULT_REPORT_DIR}/shard-K-of-N")
    group.addoption("--shard-timings", default=None, metavar="RESULTS_JSON",
                    help="with --shard: balance the parts by each cell's work in this earlier run "
                         "(default: the measured mean of each row, as the run's estimate uses)")


def with_values_joined(args: list[str]) -> list[str]:
    """`--cases X` as `--cases=X`, for each option of the matrix that takes a value. pytest picks its rootdir
    (and ini file and .pytest_cache) from the command line's paths before any plugin is loaded, so it takes the
    X of `--cases X` for a test path and roots the run there; `--cases=X` it leaves alone."""
    valued = {"--" + name.replace("_", "-") for name, unset in _MATRIX_OPTIONS.items() if unset is not False}
    joined: list[str] = []
    args = list(args)
    while args:
        arg = args.pop(0)
        joined.append(f"{arg}={args.pop(0)}" if arg in valued and args else arg)
    return joined


def requested(config: pytest.Config) -> bool:
    """Does this run ask for the matrix? Without --matrix the plugin only adds its options."""
    return bool(config.getoption("matrix", False))


def _runs_cells_here(config: pytest.Config) -> bool:
    """Will this process run matrix cells: a worker, or a run without workers?"""
    return not config.option.collectonly and (hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None))


def profile_name(config: pytest.Config) -> str:
    """The run's profile: the one chosen, else `matrix` with a CUDA device and `quick` on Triton's CPU interpreter
    (a newcomer's first run on a laptop must end in minutes; the chart's real answers come from a GPU)."""
    chosen = config.getoption("matrix_profile")
    if chosen:
        return chosen
    import torch

    return DEFAULT_PROFILE if torch.cuda.is_available() else INTERPRETER_PROFILE


def case_specs(config: pytest.Config) -> list[str]:
    return config.getoption("cases") or [registry.BUILTIN]


def loaded(config: pytest.Config) -> registry.Loaded:
    """The run's cases and the problems of the modules left out, loaded once per process."""
    if _LOADED not in config.stash:
        config.stash[_LOADED] = registry.load(case_specs(config))
    return config.stash[_LOADED]


def pytest_configure(config: pytest.Config) -> None:
    if not requested(config):
        given = [name for name, unset in _MATRIX_OPTIONS.items() if config.getoption(name) != unset]
        if given:
            raise pytest.UsageError(f"--{given[0].replace('_', '-')} is an option of the matrix: add --matrix to run it "
                                    "(or run `triton-compat-matrix run ...`, which adds it)")
        return
    try:
        parse_timeouts(config.getoption("cell_timeout"))
        if config.getoption("shard"):
            shard.parse(config.getoption("shard"))
        elif config.getoption("shard_timings"):
            raise UsageError("--shard-timings balances the parts of --shard=K/N: add --shard")
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.getoption("perf") and (config.getoption("numprocesses", None) or config.getoption("dist", "no") != "no"):
        raise pytest.UsageError("--perf times kernels: run it without -n (pytest --perf), so no other cell shares the GPU")
    _collect_the_matrix(config)
    config.pluginmanager.register(MatrixWorker(config), WORKER)
    part = shard_of(config)
    if part is not None:
        config.pluginmanager.register(MatrixShard(config, part), SHARD)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(MatrixController(config), CONTROLLER)
        if getattr(config.option, "maxschedchunk", False) is None:
            # xdist otherwise deals each worker a run of consecutive cells: with the costliest first, one
            # worker would get seven AOTInductor cells. One at a time keeps the longest-first order.
            config.option.maxschedchunk = 1
    if _runs_cells_here(config):
        # The runner imports torch and starts CUDA while this process starts and collects.
        MatrixWorker.of(config).runner.prepare()


def _collect_the_matrix(config: pytest.Config) -> None:
    """Add the matrix's module to what the run collects: beside the test paths the command line names, or
    instead of the ones pytest would take by default (testpaths, the current folder)."""
    named = {os.path.realpath(os.path.join(config.invocation_params.dir, arg.split("::")[0])) for arg in config.args}
    if os.path.realpath(MATRIX_MODULE) in named:
        return
    if config.args_source is pytest.Config.ArgsSource.ARGS:
        config.args.append(MATRIX_MODULE)
    else:
        config.args[:] = [MATRIX_MODULE]


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
    if not requested(config):
        return
    cases = loaded(config).cases
    rows = list(Row)

    expected = expected_costs(config)

    def cost(item: pytest.Item) -> tuple[float, int, bool]:
        cell = _cell_of(item)
        if cell is None or cell.case not in cases:
            return 0.0, 0, False
        # The row's measured cost, plus the autotuning its case's kernels redo for each new input size. Among
        # cells of one cost, row by row: the AOTInductor rows that run one package (Python, C++ and fresh-process
        # runtimes; strict and non-strict export when they give the same program) then start a row apart, the
        # package built by the first while the others are still queued, not side by side with one waiting.
        # In a row, the controls first: a cell that fails where its control failed is shown as ENV.
        return (-(expected(cell) + AUTOTUNE_COST_PER_CONFIG * cases[cell.case].autotune_configs), rows.index(cell.row),
                cell.wrapping is not Wrapping.CONTROL)

    items.sort(key=cost)


class MatrixShard:
    """The role of --shard=K/N in every process that collects: keep this runner's part of the cells."""

    def __init__(self, config: pytest.Config, part: shard.Shard):
        self.config, self.part = config, part

    @pytest.hookimpl(trylast=True)  # after -k, --deselect and --lf have chosen the cells: the parts split what they left
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        cells = {cell: item for item in items if (cell := _cell_of(item)) is not None}
        parts = shard.partition(cells, shard_costs(config), self.part.count)
        others = {cells[cell] for n, part in enumerate(parts, 1) if n != self.part.index for cell in part}
        if others:
            config.hook.pytest_deselected(items=[item for item in items if item in others])
            items[:] = [item for item in items if item not in others]


def _cell_of(item: pytest.Item) -> Cell | None:
    cell = getattr(item, "callspec", None) and item.callspec.params.get("cell")
    return cell if isinstance(cell, Cell) else None


def shard_of(config: pytest.Config) -> shard.Shard | None:
    given = config.getoption("shard", None) if requested(config) else None
    return shard.parse(given) if given else None


def expected_costs(config: pytest.Config, measured: Callable[[Cell], float | None] = lambda cell: None) -> Callable[[Cell], float]:
    """What a cell is expected to cost, in seconds of work: `measured` (an earlier run's), else the estimate's
    row means for this device and profile, else the row's relative cost (a profile never measured)."""
    import torch

    cases = loaded(config).cases
    mode, profile = ("gpu" if torch.cuda.is_available() else "interpreter"), profile_name(config)

    def cost(cell: Cell) -> float:
        found = measured(cell)
        if found is None:
            found = estimate.cell_seconds(cell, mode, profile, cases)
        return cell.row.spec.cost if found is None else found

    return cost


def shard_costs(config: pytest.Config) -> Callable[[Cell], float]:
    """What balances the parts of --shard: each cell's work in --shard-timings, else its expected cost."""
    from harness.model import results as results_file

    timings = config.getoption("shard_timings")
    if not timings:
        return expected_costs(config)
    try:
        return expected_costs(config, shard.costs_from(results_file.load(timings)))
    except ResultsError as exc:
        raise pytest.UsageError(f"--shard-timings: {exc}") from None


# What `-v` and the progress letters show for a cell that did not pass: (category, letter, word, colour).
# The categories are counted in pytest's last line ("3 wrong, 2 crash"); the test itself passed.
_STATUS = {
    "skipped": ("skip", "s", "SKIP", "blue"),
    "wrong": ("wrong", "w", "WRONG", "red"),
    "fail": ("fail", "f", "FAIL", "red"),
    "crash": ("crash", "c", "CRASH", "red"),
    "timeout": ("timeout", "t", "TIMEOUT", "red"),
    "env": ("env", "v", "ENV", "yellow"),
}


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    if report.when != "call" or not report.passed:
        return None
    outcome = dict(report.user_properties).get(OUTCOME_PROPERTY)
    controller = config.pluginmanager.get_plugin(CONTROLLER)
    if outcome is None or controller is None:
        return None
    if controller.blamed_on_environment(report):
        outcome = "env"
    if outcome not in _STATUS:
        return None
    category, letter, word, colour = _STATUS[outcome]
    return category, letter, (word, {colour: True})


class MatrixWorker:
    """The role of a process that runs cells: it owns this process's runner (started on first use) and
    checks each result against the baseline, when there is one."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self._runner: Runner | None = None
        self._baseline: dict[Cell, CellResult] | None = None

    @staticmethod
    def of(config: pytest.Config) -> MatrixWorker | None:
        """This process's worker role; None when the run did not ask for the matrix."""
        return config.pluginmanager.get_plugin(WORKER)

    @property
    def cases(self) -> dict[str, Any]:
        return loaded(self.config).cases

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
        timeout = timeout_for(cell.row, parse_timeouts(config.getoption("cell_timeout")))
        result = self.runner.run(cell, settings, timeout)
        result.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        item.user_properties += [(OUTCOME_PROPERTY, result.outcome.value), (STAGE_PROPERTY, result.stage.value if result.stage else ""),
                                 (MESSAGE_PROPERTY, result.message or ""), (RESULT_PROPERTY, json.dumps(result.to_json()))]
        return result

    def baseline_change(self, result: CellResult) -> str | None:
        """Why a cell fails the --baseline check, or None (always None without --baseline, or with --accept)."""
        path = self.config.getoption("baseline")
        if path is None or self.config.getoption("accept"):
            return None
        from harness.model.results import load
        from harness.reporting.diff import against_baseline

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


def _result_of(report: pytest.TestReport) -> CellResult | None:
    """The cell's result its worker attached to the test report, if the cell ran."""
    value = dict(report.user_properties).get(RESULT_PROPERTY)
    return CellResult.from_json(json.loads(value)) if value else None


def worker_count() -> int:
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


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
        self._announced = False
        self._summary: list[tuple[str, dict[str, bool]]] = []  # said at the end, after pytest's summary
        self._progress_said, self._progress_tenth = time.time(), 0
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
        self._collected([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._collected(ids)

    def _collected(self, nodeids: list[str]) -> None:
        """The cells this run will run (after -k, --lf and the like): say once what the run will do."""
        first = not self.collected and not self._announced
        self.collected |= {cell for nodeid in nodeids if (cell := Cell.of_test(nodeid))}
        if first and not self.config.option.collectonly:
            self._announced = True
            self._say(estimate.announce(self._plan()))

    def _plan(self) -> estimate.Plan:
        import torch

        cases = loaded(self.config).cases
        workers = getattr(self.config.option, "numprocesses", None)
        return estimate.Plan(cells=sorted(self.collected), all_cells=len(all_cells(list(cases))), cases=cases,
                             specs=case_specs(self.config), profile=profile_name(self.config),
                             gpu=torch.cuda.get_device_name() if torch.cuda.is_available() else None,
                             workers=workers if isinstance(workers, int) and workers > 0 else 1,
                             report_dir=self.report_dir(), shard=shard_of(self.config))

    def report_dir(self) -> str:
        """--report-dir; else `reports`, or `reports/partial` for a run of part of the matrix (-k, --lf, a cell
        named on the command line): a look at a few cells must not overwrite the whole chart."""
        chosen = self.config.getoption("report_dir")
        if chosen:
            return chosen
        part = shard_of(self.config)
        if part is not None:
            return os.path.join(DEFAULT_REPORT_DIR, part.name)
        whole = self.collected >= set(all_cells(list(loaded(self.config).cases)))
        return DEFAULT_REPORT_DIR if whole else os.path.join(DEFAULT_REPORT_DIR, PARTIAL)

    def _say(self, text: str, **markup: bool) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is None:
            return
        if getattr(getattr(terminal, "_tw", None), "width_of_current_line", 0):
            terminal.write("\n")  # after a row of progress letters
        for line in text.splitlines():
            terminal.write_line(f"triton-compat-matrix: {line}", **markup)

    def blamed_on_environment(self, report: pytest.TestReport) -> bool:
        """Does this cell fail where its control, already reported, failed too? (The reports settle it for
        every cell; `-v` can only know the controls that finished first, which the run schedules first.)"""
        cell = Cell.of_test(report.nodeid)
        control = self.results.get(cell.control()) if cell else None
        result = _result_of(report)
        if control is None or result is None:
            return False
        from harness.model.judging import blame_environment

        return blame_environment([result, control])[0].blamed_on is not None

    @pytest.hookimpl(trylast=True)  # after pytest's --lf plugin, which forgets a test that passed
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cell = Cell.of_test(report.nodeid)
        if cell is None:
            return
        result = _result_of(report)
        if result is not None:
            self.results[cell] = result
        if report.failed and cell not in self.results:
            # No result came back: the pytest worker died (xdist reports it so), or the harness broke.
            text = str(report.longrepr or "")
            died = "crashed" in text or report.when == "???"
            self.results[cell] = CellResult(
                cell, Outcome.CRASH if died else Outcome.ERROR, fault=None if died else "harness",
                message=("the pytest worker running this cell died: " if died else "harness error: ")
                + (text.strip().splitlines() or [""])[-1][:300],
            )
        if result is not None and result.outcome not in (Outcome.PASS, Outcome.SKIPPED):
            # pytest's --lf reruns the tests that failed; a cell that did not pass is one to rerun, though its test passed.
            last_failed = self.config.pluginmanager.get_plugin("lfplugin")
            if last_failed is not None:
                last_failed.lastfailed[report.nodeid] = True
        if report.when == "teardown" and result is not None:
            # Every tenth of the run, and at least every PROGRESS_EVERY_S seconds.
            tenth = 10 * len(self.results) // max(1, len(self.collected))
            if tenth > self._progress_tenth or time.time() - self._progress_said >= PROGRESS_EVERY_S:
                self._progress_said, self._progress_tenth = time.time(), tenth
                self._say(estimate.progress(self.results.values(), len(self.collected), time.time() - self.started))

    # Before xdist's own sessionfinish, which shuts its workers down (seconds to minutes while they close their
    # runners): every result is in by then, and a time limit that strikes during that shutdown must find the
    # reports written.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:  # nothing ran: the reports of the last real run stay as they are
            return
        with signals_deferred() as received:
            self._write_reports(session)
        if received:
            self._summary.append((f"{', '.join(received)} arrived while the reports were written; they were finished first", {}))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """What the run wrote, after pytest's own summary of the tests."""
        for text, markup in self._summary:
            self._say(text, **markup)

    def _write_reports(self, session: pytest.Session) -> None:
        # Read here, not from the workers: a -k selection, or every case broken, must not hide them.
        problems = loaded(self.config).problems
        if problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        import torch

        from harness.environment import fingerprint
        from harness.model.results import Results
        from harness.reporting import report

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
        from harness.environment import vec_isa

        results.fingerprint["vec_isa"] = vec_isa.recorded(os.path.join(run_caches(self.config), INDUCTOR_CACHE))
        # CPU threads each runner's torch used (None: torch's default, one per core).
        results.fingerprint["runner_threads"] = runner_threads(results.fingerprint["workers"])
        part = shard_of(self.config)
        if part is not None:  # `harness report` checks that the parts it merges are all of them
            timings = self.config.getoption("shard_timings")
            results.fingerprint["shard"] = {"index": part.index, "count": part.count,
                                            "balanced_by": timings or "the estimate's row means"}
            if timings:  # the same file under another path on another runner is the same split
                with open(timings, "rb") as f:
                    results.fingerprint["shard"]["timings_sha256"] = hashlib.sha256(f.read()).hexdigest()
        report_dir = self.report_dir()
        written = report.write(results, report_dir)
        baseline_notes = self._baseline(results)
        counts: dict[str, int] = {}
        for c in results.cells:
            key = "env" if c.blamed_on else c.outcome.value
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        say = self._summary.append
        say((f"{len(results.cells)} cells ({summary}); wrote {', '.join(written)}", {}))
        if report_dir != DEFAULT_REPORT_DIR and not self.config.getoption("report_dir"):
            say((f"this run was part of the matrix, so it wrote to {report_dir}, leaving a whole run's reports in "
                 f"{DEFAULT_REPORT_DIR} as they were (--report-dir chooses)", {}))
        if missing:
            why = f" ({results.interrupted})" if results.interrupted else ""
            say((f"INCOMPLETE{why}, {len(missing)} cells never reported", {"red": True}))
        for problem in problems:
            say((f"LEFT OUT {problem}", {"red": True}))
        for note in baseline_notes:
            say((note, {}))

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
        from harness.model import results as results_file

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

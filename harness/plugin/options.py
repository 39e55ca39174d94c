"""The matrix's options, and what a run's processes read from them: the profile, the cases, the shared directories."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import pytest

from harness.authoring import registry
from harness.model import results as results_file
from harness.model.cell import Cell, matrix_cells
from harness.model.errors import ResultsError, UsageError
from harness.model.settings import DEFAULT_PROFILE, INTERPRETER_PROFILE, PROFILES
from harness.plugin import shard

# The plugin's roles, by the names they are registered under (pytest's plugin manager finds them by these).
WORKER, CONTROLLER, SHARD = "tcm-worker", "tcm-controller", "tcm-shard"
DEFAULT_REPORT_DIR = "reports"
PARTIAL = "partial"  # where a run of part of the matrix writes, under the default report directory

# The options that only mean something to the matrix, with the value that says "not given".
MATRIX_OPTIONS = {"cases": None, "report_dir": None, "matrix_profile": None, "cell_timeout": [], "cells_per_process": None,
                   "cache_dir": None, "runner_logs": None, "profile_dir": None, "perf": False, "baseline": None, "full_run": False, "accept": False, "shard": None,
                   "shard_timings": None, "cells_must_pass": False, "compile_ahead": "auto",
                   "confirm": None}
_LOADED = pytest.StashKey[registry.Loaded]()
_IMPORT = pytest.StashKey["CasesImport"]()


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
    group.addoption("--cells-per-process", type=int, default=None,
                    help="cells a runner process serves before a fresh one takes over (0, the default: a worker's cells share "
                         "one until a fault, and --confirm checks that sharing changed no outcome; 1: each cell in a process of "
                         "its own; N: a new one after N cells)")
    group.addoption("--cache-dir", default=None, metavar="DIR",
                    help="reuse the Inductor and Triton compile caches in DIR, kept between runs "
                         "(default: fresh caches for every run, so an old cache cannot hide a compile failure)")
    group.addoption("--profile-dir", default=None, metavar="DIR",
                    help="sample every cell's processes' stacks into DIR; `python -m harness profile DIR` says where the time went. "
                         "Its outcomes are not a chart's (a sample holds frames, and their tensors, for a moment): time and chart "
                         "the matrix without it")
    group.addoption("--runner-logs", default=None, metavar="DIR",
                    help="keep each runner process's log in DIR (runner-WORKER-N.log), and the run's zygote's (zygote.log)")
    group.addoption("--compile-ahead", default="auto", choices=("auto", "on", "off"),
                    help="compile an autotuned case's configs as the run starts, in slices side by side: each a process running every "
                         "Nth config once (what its cells find is thrown away), the first work of the worker it falls to, at most "
                         "two minutes; no worker waits for a slice, and the case's cells are dealt last; auto: where kernels are "
                         "compiled (a GPU, not Triton's interpreter) and cells run side by side (-n 2 or more)")
    group.addoption("--confirm", default=None, choices=("sample", "tenth", "failing", "all", "none"),
                    help="which cells run again alone, each in a new process with empty compile caches, to prove that sharing "
                         "processes changed no outcome: sample (the default with a GPU), every cell that did not pass and one "
                         "passing cell in ten, of those that took at most 30 s; tenth (the default on Triton's CPU interpreter), one cell in ten whatever its "
                         "outcome; failing, every cell that did not pass; all; none. A cell that differs alone is charted as it "
                         "ran alone, and every cell of its case then runs alone")
    group.addoption("--perf", action="store_true",
                    help="time each passing cell's artifact on the case's benchmark input (triton.testing.do_bench); "
                         "run without -n, so cells do not share the GPU")
    group.addoption("--baseline", default=None, metavar="RESULTS_JSON",
                    help="fail a cell whose outcome differs from this earlier run's (regressed, improved or failing differently)")
    group.addoption("--full-run", action="store_true",
                    help="with --baseline: run every cell (default: a cell whose digest, of its case's sources, the harness, the "
                         "versions, the device and the options, is the one the baseline recorded is carried over from it, not run)")
    group.addoption("--cells-must-pass", action="store_true",
                    help="a cell that does not pass (WRONG, FAIL, CRASH, TIMEOUT; ENV too) fails its test, so pytest's exit status "
                         "and junit XML count it: for a CI gate that requires every cell to pass (default: a cell's outcome "
                         "is data for the reports, and only a case's or the harness's own error fails a test)")
    group.addoption("--accept", action="store_true", help="with --baseline: rewrite the baseline with this run's outcomes")
    group.addoption("--shard", default=None, metavar="K/N",
                    help="run part K of N balanced parts of the cells (a CI job matrix: one runner a part, the same options "
                         "on each); `python -m harness report` merges the parts' results.json files. Default report "
                         f"directory: {DEFAULT_REPORT_DIR}/shard-K-of-N")
    group.addoption("--shard-timings", default=None, metavar="RESULTS_JSON",
                    help="with --shard: balance the parts, and order each part's cells, by each cell's work in this earlier "
                         "run, keeping each case in one part where it fits (default: the measured mean of each row, as the "
                         "run's estimate uses, each case's wrapping styles dealt apart)")


def with_values_joined(args: list[str]) -> list[str]:
    """`--cases X` as `--cases=X`, for each option of the matrix that takes a value. pytest picks its rootdir
    (and ini file and .pytest_cache) from the command line's paths before any plugin is loaded, so it takes the
    X of `--cases X` for a test path and roots the run there; `--cases=X` it leaves alone."""
    valued = {"--" + name.replace("_", "-") for name, unset in MATRIX_OPTIONS.items() if unset is not False}
    joined: list[str] = []
    args = list(args)
    while args:
        arg = args.pop(0)
        joined.append(f"{arg}={args.pop(0)}" if arg in valued and args else arg)
    return joined


def requested(config: pytest.Config) -> bool:
    """Does this run ask for the matrix? Without --matrix the plugin only adds its options."""
    return bool(config.getoption("matrix", False))


def runs_cells_here(config: pytest.Config) -> bool:
    """Will this process run matrix cells: a worker, or a run without workers?"""
    return not config.option.collectonly and (hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None))


def profile_name(config: pytest.Config) -> str:
    """The run's profile: the one chosen, else `matrix` with a CUDA device and `quick` on Triton's CPU interpreter
    (a newcomer's first run on a laptop must end in minutes; the chart's real answers come from a GPU)."""
    chosen = config.getoption("matrix_profile")
    if chosen:
        return chosen
    import torch  # here, not at the top: the torch-free tools (report, diff) import these options' names

    return DEFAULT_PROFILE if torch.cuda.is_available() else INTERPRETER_PROFILE


# Cells a runner process serves unless --cells-per-process says: 0, every cell of its worker until a fault. Measured on one
# H200 with 16 workers (a quarter of the built-in matrix, 1,176 cells): none of them changed outcome against the chart of
# a process per cell, the 315 confirmed alone all agreed, each worker's GPU memory stayed within 64 MB of its first cell,
# and the cells took 4,003 s of work against the 8,029 s the same cells took in the chart, each in a process of its own
# (10,578 s of their workers' time against 4,189 s). Confirmation
# (harness.plugin.confirmation) proves it on every run instead of paying a process for every cell.
CELLS_PER_PROCESS = 0


def cells_per_process(config: pytest.Config) -> int:
    """Cells a runner process serves: the number chosen, else CELLS_PER_PROCESS."""
    chosen = config.getoption("cells_per_process")
    return CELLS_PER_PROCESS if chosen is None else chosen


def case_specs(config: pytest.Config) -> list[str]:
    return config.getoption("cases") or [registry.BUILTIN]


def loaded(config: pytest.Config) -> registry.Loaded:
    """The run's cases and the problems of the modules left out, loaded once per process."""
    if _LOADED not in config.stash:
        config.stash[_LOADED], config.stash[_IMPORT] = _timed_load(case_specs(config))
    return config.stash[_LOADED]


def import_cost(config: pytest.Config) -> CasesImport:
    """What importing the run's cases cost this process, and whether it left the process unsafe to fork."""
    loaded(config)
    return config.stash[_IMPORT]


@dataclass(frozen=True)
class CasesImport:
    seconds: float
    unsafe: str | None  # what the import left that a forked child cannot use (CUDA initialized, a thread), or None


def _timed_load(specs: list[str]) -> tuple[registry.Loaded, CasesImport]:
    # Each runner of a run whose cases' import leaves a process unsafe to fork imports them itself (the runner template
    # hands its runners to a child forked before that import): the estimate gives each cell that import's time. A thread
    # is the import's if it is new, not if the count grew: the controller's own threads may end meanwhile.
    from harness.processes import zygote

    cuda, threads, began = _cuda_state(), zygote.threads_running(), time.perf_counter()
    cases = registry.load(specs)
    seconds = time.perf_counter() - began
    unsafe = ("they initialized CUDA" if any(now and not before for now, before in zip(_cuda_state(), cuda)) else
              "they started a thread" if zygote.threads_running() - threads else None)
    return cases, CasesImport(seconds, unsafe)


def _cuda_state() -> tuple[bool, bool]:
    """(the CUDA driver initialized, torch's CUDA context made). The controller may have initialized the driver before
    it imports the cases (torch.cuda.is_available() does, to count the GPUs), not torch's context: a library that asks
    torch for its device at import (FlagGems asks its name) makes it, and a runner cannot be forked after that either."""
    from harness.processes import zygote

    torch = sys.modules.get("torch")
    return zygote.cuda_initialized(), bool(torch is not None and torch.cuda.is_initialized())


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


def run_zygote(config: pytest.Config) -> str | None:
    """The socket of the run's zygote, which forks its runner processes (harness.plugin.controller starts it)."""
    if hasattr(config, "workerinput"):
        return config.workerinput.get("tcm_zygote")
    return config.pluginmanager.get_plugin(CONTROLLER).processes.zygote(workers=1)


def run_runner_template(config: pytest.Config) -> str | None:
    """The socket of the run's runner template, which forks its runner processes where it can (the zygote starts it)."""
    if hasattr(config, "workerinput"):
        return config.workerinput.get("tcm_runner_template")
    controller = config.pluginmanager.get_plugin(CONTROLLER)
    return controller.processes.runner_template_socket() if controller.processes.zygote(workers=1) else None


def compiling_ahead_folder(config: pytest.Config) -> str:
    """Where the run's compile-ahead slices work and mark the cases they compile (harness.execution.compile_ahead): in the
    run's own folder, never a reused --cache-dir."""
    return os.path.join(_fresh_run_dir(config), "compile-ahead")


def interrupted_folder(config: pytest.Config) -> str:
    """Where each worker of the run, stopped, says it has ended its cell in flight (harness.plugin.interrupts): a file
    named by its pid, in the run's own folder."""
    return os.path.join(_fresh_run_dir(config), "interrupted")


def alone_folder(config: pytest.Config) -> str:
    """Where the run marks the cases whose cells run alone (harness.plugin.confirmation): in the run's own folder."""
    return os.path.join(_fresh_run_dir(config), "alone")


def compiled_ahead(config: pytest.Config) -> frozenset[str]:
    """The cases whose configs the run compiles ahead, as the controller started their slices (none in a worker)."""
    controller = config.pluginmanager.get_plugin(CONTROLLER)
    return controller.processes.compiling_ahead() if controller is not None else frozenset()


def still_compiling_ahead(config: pytest.Config) -> frozenset[str]:
    """The cases compiled ahead with a slice that has not yet ended (none in a worker)."""
    controller = config.pluginmanager.get_plugin(CONTROLLER)
    return controller.processes.still_compiling_ahead() if controller is not None else frozenset()


def compiles_ahead(config: pytest.Config, interpreted: bool, workers: int) -> bool:
    """Whether the run compiles its autotuned cases' configs ahead (--compile-ahead): auto where kernels are compiled (not
    Triton's `interpreted` kernels, which nothing compiles) and `workers` run cells side by side (one at a time, the
    first cell's compiles are the next cell's cache)."""
    chosen = config.getoption("compile_ahead")
    return chosen == "on" or (chosen == "auto" and not interpreted and workers > 1)


def run_packages(config: pytest.Config) -> str:
    """Where this run's AOTInductor packages are shared between its runners: always fresh, never the
    reused --cache-dir (a package from another run must not stand in for this run's build)."""
    return os.path.join(_fresh_run_dir(config), "aoti-packages")


def carried_cells(config: pytest.Config) -> frozenset[str]:
    """The ids of the cells this run carries over from its --baseline instead of running (harness.plugin.carry_over),
    as the controller decided them once for every worker."""
    if hasattr(config, "workerinput"):
        return frozenset(config.workerinput.get("tcm_carried") or ())
    controller = config.pluginmanager.get_plugin(CONTROLLER)
    return controller.carried_ids() if controller is not None else frozenset()


def shard_of(config: pytest.Config) -> shard.Shard | None:
    given = config.getoption("shard", None) if requested(config) else None
    return shard.parse(given) if given else None


def check_baseline(config: pytest.Config) -> None:
    """--baseline is read now, before any cell runs: a file that is missing (without --accept, which creates it),
    truncated or of another schema would otherwise fail every cell's test after the whole run."""
    path = config.getoption("baseline")
    if path is None:
        for alone in ("accept", "full_run"):
            if config.getoption(alone):
                what = "rewrites the --baseline file" if alone == "accept" else "runs the cells a --baseline would carry over"
                raise UsageError(f"--{alone.replace('_', '-')} {what}: add --baseline RESULTS_JSON")
        return
    if not os.path.exists(path):
        if not config.getoption("accept"):
            raise UsageError(f"--baseline {path}: no such file; to make it from this run, add --accept")
        return
    try:
        results_file.load(path)
    except ResultsError as exc:
        raise UsageError(f"--baseline: {exc}") from None


def check_report_dir(config: pytest.Config) -> None:
    """--report-dir must be a folder this run can write: found out at the end, the run's results would have nowhere to go."""
    chosen = config.getoption("report_dir")
    if chosen is None:
        return
    folder = os.path.abspath(chosen)
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"--report-dir {chosen}: {existing} is a file, not a folder; give a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--report-dir {chosen}: {existing} is not writable by this user; give a folder you can write")


def report_folder(config: pytest.Config, collected: set[Cell]) -> str:
    """Where the run's reports go: --report-dir; else `reports`, or `reports/partial` for a run of part of the matrix (-k,
    --lf, a cell named on the command line): a look at a few cells must not overwrite the whole chart."""
    chosen = config.getoption("report_dir")
    if chosen:
        return chosen
    part = shard_of(config)
    if part is not None:
        return os.path.join(DEFAULT_REPORT_DIR, part.name)
    whole = collected >= set(matrix_cells(loaded(config).cases))
    return DEFAULT_REPORT_DIR if whole else os.path.join(DEFAULT_REPORT_DIR, PARTIAL)


def locked_report_folder(config: pytest.Config) -> str:
    """The folder the run holds from its start, before it knows which cells it collects: --report-dir, its --shard part's
    folder, else `reports`, which holds `reports/partial`."""
    chosen = config.getoption("report_dir")
    part = shard_of(config)
    return chosen or (os.path.join(DEFAULT_REPORT_DIR, part.name) if part is not None else DEFAULT_REPORT_DIR)


def final_report_folder(config: pytest.Config, collected: set[Cell], complete: bool) -> str:
    """Where the run's reports go once it ended: `report_folder`, unless the run stopped before every cell reported. An
    incomplete run never replaces a complete chart: without --report-dir it writes to reports/partial, as a run of part
    of the matrix does; with one, to its `partial` folder where the folder holds a complete run."""
    planned = report_folder(config, collected)
    if complete:
        return planned
    if not config.getoption("report_dir"):
        return os.path.join(DEFAULT_REPORT_DIR, PARTIAL)
    return os.path.join(planned, PARTIAL) if _holds_a_complete_run(planned) else planned


def _holds_a_complete_run(folder: str) -> bool:
    try:
        return results_file.load(os.path.join(folder, "results.json")).complete
    except ResultsError:  # none, or not one this harness reads: nothing complete to keep
        return False

"""The pytest side: one test item per cell, each run in an isolated runner process.

Installed, the plugin is loaded into every pytest run (a `pytest11` entry point) but only adds its options
until a run asks for the matrix with `--matrix` (`triton-compat-matrix run` is `pytest --matrix`): then it
adds the matrix's test module, shipped in the package (harness/plugin/matrix.py), to what the run collects.

Roles follow pytest-cov and xdist's dsession, one class each, one method per pytest event:
- `MatrixWorker`, in every process of a matrix run, owns the runner process where it runs cells (an xdist
  worker, or a run without workers), runs each cell there and attaches its result to the test report;
- `MatrixController`, in the process that started the run, collects the reports, says what the run will do
  and how far it got, notices workers that died, and alone writes the reports, once, at the end;
- `MatrixScheduling` (harness.plugin.dealing), the controller's dealer with workers: xdist's own, but an autotuned
  case's first eager cell dealt first and the cells that would compile its kernels again beside it after the others
  (where its configs are compiled ahead, none first: all of them after the others).

A cell's outcome is data, not a pass or fail of its test: `-v` shows it (WRONG, FAIL, CRASH, TIMEOUT, ENV,
SKIP), junit XML carries it in properties, and `--lf` reruns the cells that did not pass.
"""

from __future__ import annotations

import os

import pytest

from harness.authoring import registry
from harness.model.errors import UsageError
from harness.model.rows import parse_timeouts
from harness.plugin import shard
from harness.plugin.controller import MatrixController
from harness.plugin.options import (
    CONTROLLER,
    MATRIX_OPTIONS,
    SHARD,
    WORKER,
    check_baseline,
    check_report_dir,
    pytest_addoption,
    requested,
    runs_cells_here,
    shard_of,
    with_values_joined,
)
from harness.plugin.scheduling import MatrixShard, pytest_collection_modifyitems
from harness.plugin.status import pytest_report_teststatus
from harness.plugin.worker import MatrixWorker

# pytest finds a plugin's hooks by name among the module's attributes: these three are defined in the modules
# of their roles and registered from here.
__all__ = ["MATRIX_MODULE", "pytest_addoption", "pytest_collection_modifyitems", "pytest_configure", "pytest_report_teststatus",
           "with_values_joined"]

MATRIX_MODULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "matrix.py")


def pytest_configure(config: pytest.Config) -> None:
    if not requested(config):
        given = [name for name, unset in MATRIX_OPTIONS.items() if config.getoption(name) != unset]
        if given:
            raise pytest.UsageError(f"--{given[0].replace('_', '-')} is an option of the matrix: add --matrix to run it "
                                    "(or run `triton-compat-matrix run ...`, which adds it)")
        return
    try:
        parse_timeouts(config.getoption("cell_timeout"))
        check_baseline(config)
        check_report_dir(config)
        if config.getoption("shard"):
            shard.parse(config.getoption("shard"))
        elif config.getoption("shard_timings"):
            raise UsageError("--shard-timings balances the parts of --shard=K/N: add --shard")
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.getoption("perf") and (config.getoption("numprocesses", None) or config.getoption("dist", "no") != "no"):
        raise pytest.UsageError("--perf times kernels: run it without -n (pytest --matrix --perf), so no other cell shares the GPU")
    _collect_the_matrix(config)
    # Case modules import as test modules do: from the rootdir and the folder the run started in, as
    # `python -m harness cases` imports them from the current folder.
    registry.importable(str(config.rootpath))
    registry.importable(str(config.invocation_params.dir))
    config.pluginmanager.register(MatrixWorker(config), WORKER)
    part = shard_of(config)
    if part is not None:
        config.pluginmanager.register(MatrixShard(config, part), SHARD)
    if not hasattr(config, "workerinput"):
        controller = MatrixController(config)
        config.pluginmanager.register(controller, CONTROLLER)
        if not config.option.collectonly:  # a run that writes reports holds their folder from its start
            controller.hold_report_folder()
        if getattr(config.option, "maxschedchunk", False) is None:
            # xdist otherwise deals each worker a run of consecutive cells: with the costliest first, one
            # worker would get seven AOTInductor cells. One at a time keeps the longest-first order.
            config.option.maxschedchunk = 1
    if runs_cells_here(config):
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

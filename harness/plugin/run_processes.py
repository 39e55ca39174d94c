"""What a run starts once and its cells share: its zygote, runner template, prebuilds and compile-ahead plan.

The controller holds one RunProcesses for the run (harness.plugin.controller). The zygote is started at the first
worker's start, in the environment the runners get, before the controller imports torch; the prebuilds and the
compile-ahead slices once the cells are collected; everything ends with the run, its logs kept where --runner-logs says.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from harness.authoring import registry
from harness.execution import compile_ahead, prebuild
from harness.model.cell import Cell
from harness.plugin.options import case_specs, compiles_ahead, compiling_ahead_folder, loaded, run_caches, run_packages
from harness.processes import runner_template
from harness.processes.helper_process import RunnerTemplate, start_zygote, stop_zygote
from harness.processes.runner import runner_env

MAX_SOCKET_PATH = 107  # bytes in a Unix socket's path on Linux (sun_path, less its terminating NUL)


class RunProcesses:
    """The run's shared processes, in its own folder `folder` (only its user can reach it)."""

    def __init__(self, config: pytest.Config, folder: str):
        self.config, self.folder = config, folder
        self._zygote: tuple[Any, Any] | None = None  # the zygote process and its lifeline (zygote)
        self._env: dict[str, str] | None = None  # the runners' environment (runners_env)
        self._prebuilding: prebuild.Prebuilding | None = None  # the run's own builds (harness.execution.prebuild)
        self._compiling: list[compile_ahead.Slice] | None = None  # its autotuned cases' configs (harness.execution.compile_ahead)

    def zygote(self, workers: int) -> str | None:
        """The socket of the run's zygote (harness.processes.zygote), which forks the run's runner template, every
        runner the template does not and their helper processes; started at the first worker's start, in the environment
        the runners get, so that the imports it pays are the ones a runner would have paid. Before the controller imports
        torch: the zygote decides itself what depends on the GPU torch sees, and the workers start 3 s sooner. None where
        the run's folder's path is too long for a socket's (a long TMPDIR): each runner is then started alone."""
        path, runners = os.path.join(self.folder, "zygote.sock"), self.runner_template_socket()
        if runners is None:
            return None
        if self._zygote is None:
            config = self.config
            env = runner_env(self.folder, cache_dir=run_caches(config), workers=workers, perf=config.getoption("perf"),
                             profile_dir=config.getoption("profile_dir"), device=False)
            self._zygote = start_zygote(os.path.join(self.folder, "zygote.log"), path, {**os.environ, **env},
                                        runners=RunnerTemplate(runners, runner_template.__name__, registry.search_path(), case_specs(config)))
        return path

    def runner_template_socket(self) -> str | None:
        """The socket of the run's runner template (harness.processes.runner_template), which its zygote forks."""
        path = os.path.join(self.folder, "runners.sock")
        return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None

    def runners_env(self, workers: int) -> dict[str, str]:
        """The environment the run's runners get, and its prebuilds with them (the same, once chosen)."""
        if self._env is None:
            config = self.config
            env = runner_env(self.folder, cache_dir=run_caches(config), workers=workers, perf=config.getoption("perf"),
                             profile_dir=config.getoption("profile_dir"))
            self._env = {**os.environ, **env}
        return self._env

    def prebuild(self, cells: set[Cell], workers: int) -> None:
        """Start what the cells' builds share (harness.execution.prebuild), where workers run cells side by side and so
        would wait for the first of them to build it: the run's zygote forks a process for each."""
        needed = prebuild.needed(cells)
        if workers < 2 or not needed or self._prebuilding is not None:
            return
        zygote = self.zygote(workers)
        self._prebuilding = prebuild.Prebuilding(needed, self.runners_env(workers), caches=run_caches(self.config),
                                                 packages=run_packages(self.config), folder=self.folder, zygote=zygote)

    def compile_ahead(self, cells: set[Cell], workers: int) -> None:
        """Plan the autotuned cases' configs compiled in slices before their cells (harness.execution.compile_ahead),
        where --compile-ahead says so: each worker runs its share of them before its first cell."""
        env = self.runners_env(workers)
        if self._compiling is not None or not compiles_ahead(self.config, env.get("TRITON_INTERPRET") == "1", workers):
            return
        autotuners = {name: case.autotuners for name, case in loaded(self.config).cases.items() if case.autotune_configs}
        self._compiling = compile_ahead.plan(sorted(cells, key=lambda cell: cell.id), autotuners, workers)
        if self._compiling:
            compile_ahead.write_plan(compiling_ahead_folder(self.config), self._compiling)

    def compiling_ahead(self) -> frozenset[str]:
        """The cases whose configs the run compiles ahead, once started."""
        return frozenset(s.case for s in self._compiling) if self._compiling else frozenset()

    def still_compiling_ahead(self) -> frozenset[str]:
        """The cases compiled ahead with a slice that has not yet ended."""
        return compile_ahead.unfinished(compiling_ahead_folder(self.config), self._compiling) if self._compiling else frozenset()

    def prebuilt(self) -> list[Any]:
        """What the run's own builds and its compile-ahead slices did (Results.prebuilt)."""
        return [*(self._prebuilding.results() if self._prebuilding is not None else []),
                *(compile_ahead.said(compiling_ahead_folder(self.config)) if self._compiling else [])]

    def stop(self, kill: bool) -> None:
        """End them all (`kill`: the zygote at once, where no cell reported and it may be importing still), keeping the
        zygote's and the prebuilds' logs where --runner-logs says."""
        if self._prebuilding is not None:
            self._prebuilding.stop()
        if self._zygote is not None:
            stop_zygote(*self._zygote, kill=kill)
        logs = self.config.getoption("runner_logs")
        for name in ("zygote.log", "prebuild.log"):
            if logs and os.path.exists(log := os.path.join(self.folder, name)):
                os.makedirs(logs, exist_ok=True)
                shutil.copy(log, os.path.join(logs, name))

import dataclasses
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

import pytest

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.rows import Row
from harness.model.settings import DEFAULT_PROFILE, PROFILES, Settings
from harness.processes.helper_process import ZYGOTE_ENV, ZYGOTE_SCRIPT, python_output, start_zygote, stop_zygote, without_pytest
from harness.processes.runner import Runner, runner_env

PLANTED = os.path.join(os.path.dirname(__file__), "planted.py")
COMMAND_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "command_template.py")


@pytest.fixture(scope="session")
def run_zygote():
    """A zygote for the runners of this test process, as a run's (harness.plugin.controller): its socket."""
    folder = tempfile.mkdtemp(prefix="tcm-zygote-")
    proc, lifeline = start_zygote(os.path.join(folder, "zygote.log"), os.path.join(folder, "zygote.sock"),
                                  {**os.environ, **runner_env(folder)})
    yield os.path.join(folder, "zygote.sock")
    stop_zygote(proc, lifeline)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def matrix_runs_fork_their_zygotes(request):
    """The matrix runs these tests start fork their zygotes from this process's (ZYGOTE_ENV, which they inherit): its
    imports, the same in the same environment, are paid once a test process instead of once a run. Where a run's
    import-time environment differs (OMP_NUM_THREADS with workers, say) that zygote refuses and the run starts its own,
    as a user's run does; tests/harness/test_invisible.py's audit runs as a user's does. Not where torch is missing (the
    torch-free venv's tests run no matrix)."""
    if importlib.util.find_spec("torch") is None:
        yield
        return
    os.environ[ZYGOTE_ENV] = request.getfixturevalue("run_zygote")
    yield
    os.environ.pop(ZYGOTE_ENV, None)


class _CommandTemplate:
    """This test process's command template (tests/harness/command_template.py): started at the first command, in this
    process's environment then; stopped as the session ends."""

    def __init__(self):
        self.lock = threading.Lock()
        self.folder = self.proc = self.lifeline = None

    def socket(self):
        """The template's socket, or None where this machine has no torch (the torch-free venv's tests run no matrix)."""
        if importlib.util.find_spec("torch") is None:
            return None
        with self.lock:
            if self.proc is None:
                self.folder = tempfile.mkdtemp(prefix="tcm-commands-")
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                with open(os.path.join(self.folder, "template.log"), "ab") as log:
                    self.proc = subprocess.Popen(
                        [sys.executable, COMMAND_TEMPLATE, ZYGOTE_SCRIPT, str(theirs.fileno()), os.path.join(self.folder, "template.sock")],
                        pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=without_pytest(os.environ),
                        start_new_session=True)
                theirs.close()
                self.lifeline = ours
            if self.proc.poll() is not None:  # it could not serve: see its log
                return None
            return os.path.join(self.folder, "template.sock")

    def stop(self):
        if self.proc is not None:
            stop_zygote(self.proc, self.lifeline)
            shutil.rmtree(self.folder, ignore_errors=True)
            self.proc = None


_COMMANDS = _CommandTemplate()


@pytest.fixture(scope="session", autouse=True)
def command_template_stops():
    yield
    _COMMANDS.stop()


def run_python(command, cwd=None, env=None, timeout=None):
    """subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout) for a command of this
    interpreter (`python -m pytest --matrix ...`, `python -m harness ...`), forked from the tests' command template, its
    imports paid once a test process; started with subprocess where the template cannot serve it (another interpreter,
    or an environment it was not imported in)."""
    at = _COMMANDS.socket()
    command, cwd = [os.fspath(word) for word in command], None if cwd is None else os.fspath(cwd)  # as subprocess takes them
    if at is not None:
        with tempfile.NamedTemporaryFile(prefix="tcm-stderr-") as stderr:
            done = python_output(command, env, cwd, timeout, zygote_at=at, stderr=stderr.name)
            if done is not None:
                return subprocess.CompletedProcess(command, done[0], done[1].decode(errors="replace"), stderr.read().decode(errors="replace"))
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def runner_of(case_file, zygote=None, *more_case_files, env=None):
    """A runner process over a case file (and `more_case_files`, loaded after it, as --cases names them), in a work folder
    of its own, forked from `zygote` (a socket) where given, with `env` over a run's runner environment, for a
    module-scoped fixture to yield."""
    workdir = tempfile.mkdtemp(prefix="tcm-test-")
    with Runner([case_file, *more_case_files], workdir, env={**runner_env(workdir), **(env or {})}, zygote=zygote) as runner:
        yield runner
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def planted_runner(run_zygote):
    yield from runner_of(PLANTED, run_zygote)


@pytest.fixture
def run_planted(planted_runner):
    def run(case, wrapping="raw", row="eager", timeout=120.0, runner=None, **given):
        runner = runner or planted_runner
        cell = Cell(case, Wrapping(wrapping), Row(row))
        # Each keyword is a Settings field (packages=, caches=) or a profile's (max_examples=, dtypes_per_cell=).
        run_fields = {f.name for f in dataclasses.fields(Settings)}
        profile = dataclasses.replace(PROFILES[DEFAULT_PROFILE], name="tests",
                                      **{"max_examples": 10, **{k: v for k, v in given.items() if k not in run_fields}})
        return runner.run(cell, Settings(profile=profile, **{"workdir": runner.workdir, **{k: v for k, v in given.items() if k in run_fields}}),
                          timeout)

    return run

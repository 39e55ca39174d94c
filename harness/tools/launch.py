"""Starting a matrix run as a user does (`pytest -n auto --matrix`), for bench, repeat and `run`. The signals
the command receives passed on to the runs it started."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from importlib.metadata import entry_points
from typing import Any, Iterator

from harness.plugin import with_values_joined


def matrix_plugin_args() -> list[str]:
    """`-p harness.plugin` where the package is not installed (a checkout run as `python -m harness`), so that
    pytest loads the plugin; nothing where its entry point loads it (naming it twice would fail)."""
    installed = any(ep.value == "harness.plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "harness.plugin"]


def matrix_args(pytest_args: list[str]) -> list[str]:
    """pytest's arguments for a run of the matrix: the plugin where it is not installed, --matrix, and the
    given arguments with each matrix option's value joined to it (`--cases=X`)."""
    return [*matrix_plugin_args(), "--matrix", *with_values_joined(pytest_args)]


def matrix_command(pytest_args: list[str], report_dir: str) -> list[str]:
    """The matrix as a user runs it (`pytest --matrix -n auto` unless the arguments choose -n), reports to report_dir."""
    if not any(a.startswith(("-n", "--numprocesses")) for a in pytest_args):
        pytest_args = ["-n", "auto", *pytest_args]
    return [sys.executable, "-m", "pytest", f"--report-dir={os.path.abspath(report_dir)}", "-q", *matrix_args(pytest_args)]


def results_written(report_dir: str, since: float) -> str | None:
    """The results file the run started at `since` (time.time()) wrote into report_dir: its results.json, or,
    for a run stopped early where report_dir held a complete chart, report_dir/partial/results.json (a stopped
    run never replaces a complete one); None where it wrote neither."""
    for path in (os.path.join(report_dir, "partial", "results.json"), os.path.join(report_dir, "results.json")):
        if os.path.exists(path) and os.path.getmtime(path) >= since:
            return path
    return None


def _die_with_parent() -> None:
    """In the child, before pytest starts: SIGTERM when this process dies, even by SIGKILL (Linux), so that an
    orphaned run still stops and writes its reports."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell's background job inherits SIGINT ignored
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_matrix(command: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """A pytest run of the matrix in a session of its own: Ctrl-C at a terminal, or `timeout`'s signal to its
    process group, reaches this process alone, and `forwarding_signals` passes it on once."""
    return subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent, **popen)


@contextlib.contextmanager
def forwarding_signals(runs: list[subprocess.Popen[bytes]]) -> Iterator[list[str]]:
    """SIGINT and SIGTERM sent to this process are passed to the matrix runs still going, which stop as a run
    stopped by hand does: they write their reports, marked incomplete. This process waits for them instead of
    dying (as subprocess.run would, killing its child); the names of the signals received are yielded."""
    received: list[str] = []

    def forward(signum: int, frame: Any) -> None:
        received.append(signal.Signals(signum).name)
        print(f"{signal.Signals(signum).name}: passed to the matrix run, which writes its reports (marked incomplete)",
              file=sys.stderr, flush=True)
        for run in runs:
            if run.poll() is None:
                run.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

"""The role of the process that started the run. It collects every cell's report, says what the run will do and
how far it got, notices workers that died, and alone writes the reports, once, at the end."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from harness.authoring import registry
from harness.environment import machine, vec_isa
from harness.model import results as results_file
from harness.model.cell import Cell, matrix_cells
from harness.model.errors import OutputNotWritten, UsageError
from harness.model.fingerprint import Fingerprint, ShardPart
from harness.model.judging import blame_environment
from harness.model.outcome import WORKER_DIED, CellResult, Fault, Outcome
from harness.model.results import Results
from harness.model.settings import PROFILES
from harness.plugin import carry_over, confirmation, estimate, heap
from harness.plugin.interrupts import redelivered_after_a_collection, signals_deferred
from harness.plugin.options import (
    DEFAULT_REPORT_DIR,
    PARTIAL,
    alone_folder,
    case_specs,
    cells_per_process,
    final_report_folder,
    import_cost,
    interrupted_folder,
    loaded,
    locked_report_folder,
    profile_name,
    report_folder,
    run_caches,
    shard_of,
)
from harness.plugin.report_lock import ReportFolderLock
from harness.plugin.run_processes import RunProcesses
from harness.plugin.status import result_of
from harness.plugin.worker import MatrixWorker
from harness.processes import autotune_timing
from harness.processes.helper_process import python_output, still_there
from harness.processes.runner import INDUCTOR_CACHE, runner_threads
from harness.reporting import report

PROGRESS_EVERY_S = 30.0  # how often the controller says how far the run got
# How long a stopped run waits for its workers to end their cells in flight before it writes its reports: a runner is
# killed at once, and its worker says so as soon as it has seen it gone.
INTERRUPTED_WAIT_S = 10.0


def _worker_pid(node: Any) -> int | None:
    """An xdist worker's process id, from what execnet read of it when xdist set the worker up (its remote info, which
    xdist caches there); None where that is not there (a worker on another host, another execnet)."""
    try:
        return int(node.gateway._rinfo().pid) if node.gateway.spec.popen else None
    except Exception:  # noqa: BLE001 - execnet's private API: any failure only means the worker is not told
        return None


def _remove_behind(folder: str) -> None:
    """Remove the run's own folder (its compile caches: thousands of files, a second to remove on the GPU runner) in a
    process that outlives this one, so that the run ends without waiting for it; here, where none can be started."""
    try:
        subprocess.Popen([sys.executable, "-c", "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)", folder],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)


def _raised(report: pytest.TestReport) -> str:
    """What the harness raised in a worker, where no result came back: the exception with its message (a runner
    process that did not start says why, and its log's last lines) and where it was raised."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is None:
        return (str(report.longrepr or "").strip().splitlines() or [""])[-1][:300]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # where the harness package is
    where = os.path.relpath(crash.path, root) if crash.path.startswith(root + os.sep) else os.path.basename(crash.path)
    return f"{crash.message.strip()[:700]} ({where}:{crash.lineno})"


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
        self._report_lock: ReportFolderLock | None = None  # taken by hold_report_folder, when the run starts
        self._workers = 1  # as the first worker was told
        self.processes = RunProcesses(config, self.run_caches)  # the zygote, the runner template, the prebuilds, compile-ahead
        self._timeline: dict[str, float] = {"started": self.started}  # Results.timeline
        self._this_machine: Future[Fingerprint | None] | None = None  # what the machine is, read beside the first cells
        self._carried: frozenset[str] | None = None  # the cells carried over from --baseline (carried_ids)
        self._carried_from = ""  # the run they come from (carry_over.source_run)
        self._made_digests: carry_over.Digests | None = None  # each cell's digest (_digests)
        self._began: dict[Cell, float] = {}  # when each cell began, as its worker said (pytest_runtest_logstart)
        self._worker_pids: list[int] = []  # each worker's process, told when the run stops (pytest_keyboard_interrupt)
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            # A CI job's timeout or `kill` sends SIGTERM: stop as on Ctrl-C, so the cells that ran are reported.
            self._sigterm = signal.signal(signal.SIGTERM, self._terminated)

    def _terminated(self, signum: int, frame: Any) -> None:
        if redelivered_after_a_collection(signum, frame):
            return
        self.stopped_by = "SIGTERM"
        raise KeyboardInterrupt("SIGTERM")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        self._timeline.setdefault("first_configured", round(time.time() - self.started, 2))
        self._workers = node.workerinput["workercount"]
        if (pid := _worker_pid(node)) is not None:
            self._worker_pids.append(pid)
        node.workerinput["tcm_run_caches"] = self.run_caches
        node.workerinput["tcm_zygote"] = None if self.config.option.collectonly else self.processes.zygote(node.workerinput["workercount"])
        node.workerinput["tcm_runner_template"] = node.workerinput["tcm_zygote"] and self.processes.runner_template_socket()
        node.workerinput["tcm_carried"] = sorted(self.carried_ids())
        self._timeline["last_configured"] = round(time.time() - self.started, 2)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """xdist's `--dist load` (its default with -n), but an autotuned case's cells dealt after the cell that compiles
        its kernels first (harness.plugin.dealing); another --dist is xdist's own."""
        if config.getvalue("dist") != "load":
            return None
        from harness.plugin.dealing import MatrixScheduling  # here: xdist is there only where this hook is called

        return MatrixScheduling(config, log)

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        """The run stops (Ctrl-C, or SIGTERM, or a signal that bench passed on, sent to this process alone): each worker
        is interrupted as Ctrl-C at a terminal interrupts it, so that it ends the cell in flight at once, its runner
        killed, instead of finishing it (minutes, for a library's autotuned cell) while nothing waits for its result.
        A worker that the terminal's Ctrl-C reached already counts this one as a second, and ignores it. The reports are
        written once each worker has said its cell in flight has ended (harness.plugin.interrupts), or after
        INTERRUPTED_WAIT_S: signalled, a worker's runner may otherwise still be running while they are written."""
        told = []
        for pid in self._worker_pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGINT)
                told.append(pid)
        folder, deadline = interrupted_folder(self.config), time.monotonic() + INTERRUPTED_WAIT_S
        while any(still_there(pid) and not os.path.exists(os.path.join(folder, str(pid))) for pid in told) and time.monotonic() < deadline:
            time.sleep(0.05)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._report_lock is not None:
            left = self._report_lock.release()
            if left:  # the lock itself went with its file descriptor: its files only say who held it
                print(f"triton-compat-matrix: the report folder's lock files could not be removed ({', '.join(left)}): "
                      "remove them; no run holds the folder", file=sys.stderr)
        if self._sigterm is not None:
            signal.signal(signal.SIGTERM, self._sigterm)
        self.processes.stop(kill=not self.results)  # a run in which no cell reported has nothing of it to wait for
        _remove_behind(self.run_caches)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # xdist's word for a worker that ended on Ctrl-C. The terminal sent it to this process too, but a worker
        # that stops first is reported here before this process's KeyboardInterrupt may be raised: the cell it was
        # running was interrupted, not crashed, and the run is incomplete.
        if error == "keyboard-interrupt" and not self.stopped_by:
            self.stopped_by = "interrupted (Ctrl-C)"

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._timeline.setdefault("first_collected", round(time.time() - self.started, 2))
        self._timeline["last_collected"] = round(time.time() - self.started, 2)
        self._collected(ids)

    def _collected(self, nodeids: list[str]) -> None:
        """The cells this run will run (after -k, --lf and the like): say once what the run will do."""
        first = not self.collected and not self._announced
        self.collected |= {cell for nodeid in nodeids if (cell := Cell.of_test(nodeid))}
        if first and not self.config.option.collectonly:
            self._announced = True
            self.processes.prebuild(self._to_run(), self._workers)
            self.processes.compile_ahead(self._to_run(), self._workers)
            self._say(estimate.announce(self._plan()))
            self._read_this_machine()
            heap.freeze()  # torch and the cases, imported for the plan, stay to the end

    def _read_this_machine(self) -> Future[Fingerprint | None]:
        """Start reading what this machine is (machine.this_machine(): seconds of imports, nvidia-smi, the compilers and
        git) in a process of its own, beside the run's first cells, instead of after the last one; the reports take it."""
        if self._this_machine is None:
            read: Future[Fingerprint | None] = Future()

            # Forked from the run's zygote, which imported torch already; its environment chosen here: the thread imports nothing.
            zygote, env = self.processes.zygote(self._workers), self.processes.runners_env(self._workers)
            start = functools.partial(python_output, timeout=machine.READ_S, zygote_at=zygote) if zygote else None

            def reading() -> None:
                read.set_result(machine.read_in_a_process(env, start))
                self._timeline["machine_read"] = round(time.time() - self.started, 2)

            # A daemon thread, not an executor's: a run that ends before it needs the answer (none of its cells
            # selected) does not wait at its exit for the reading process's imports.
            threading.Thread(target=reading, name="tcm-this-machine", daemon=True).start()
            self._this_machine = read
        return self._this_machine

    def _to_run(self) -> set[Cell]:
        """The collected cells this run runs: not those it carries over from its --baseline."""
        carried = self.carried_ids()
        return {cell for cell in self.collected if cell.id not in carried} if carried else self.collected

    def _plan(self) -> estimate.Plan:
        import torch  # here, not at the top: the plugin is loaded into every pytest run, most of which need no torch

        cases = loaded(self.config).cases
        workers = getattr(self.config.option, "numprocesses", None)
        to_run = self._to_run()
        return estimate.Plan(cells=sorted(to_run), carried=len(self.collected) - len(to_run),
                             carried_from=self._carried_from, all_cells=len(matrix_cells(cases)), cases=cases,
                             specs=case_specs(self.config), profile=profile_name(self.config),
                             gpu=torch.cuda.get_device_name() if torch.cuda.is_available() else None,
                             workers=workers if isinstance(workers, int) and workers > 0 else 1,
                             report_dir=report_folder(self.config, self.collected), shard=shard_of(self.config), compiled_ahead=self.processes.compiling_ahead(),
                             **self._runner_start())

    def _runner_start(self) -> dict[str, Any]:
        """What each cell's runner is expected to pay to start, and why: where the cases' import leaves a process unsafe to
        fork, each runner imports them itself, as long as this process took to (on the GPU runner FlagGems's runners started
        in a median 3.1 s: reports/evidence/gpu/flag-gems/spare-template); else the runner template's fork, about nothing."""
        cost = import_cost(self.config)
        if not cost.unsafe or cells_per_process(self.config) != 1:
            return {}
        return {"runner_start": cost.seconds, "runner_start_why": cost.unsafe}

    def hold_report_folder(self) -> None:
        """Take the report folder's lock for the whole run; pytest.UsageError, naming the run that holds it, if
        another run writes there."""
        folder = locked_report_folder(self.config)
        try:
            for where in (folder, os.path.join(folder, PARTIAL)):  # where its reports may go: refused now, not once the cells ran
                report.check_writable(where)
        except OutputNotWritten as exc:
            raise pytest.UsageError(f"the report folder: {exc}") from None
        self._report_lock = ReportFolderLock(folder, command=shlex.join(["pytest", *self.config.invocation_params.args]))
        try:
            self._report_lock.acquire()
        except UsageError as exc:  # another run holds it, or it cannot be written
            self._report_lock = None
            raise pytest.UsageError(str(exc)) from None

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
        result = result_of(report)
        if control is None or result is None:
            return False
        return blame_environment([result, control])[0].blamed_on is not None

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if (cell := Cell.of_test(nodeid)) is not None:
            self._began.setdefault(cell, time.time())

    @pytest.hookimpl(trylast=True)  # after pytest's --lf plugin, which forgets a test that passed
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cell = Cell.of_test(report.nodeid)
        if cell is None:
            return
        result = result_of(report)
        if result is not None:
            self.results[cell] = result
        if report.failed and cell not in self.results and not self.stopped_by:
            # No result came back: the pytest worker died (xdist reports it so), or the harness broke. Once the run
            # was stopped, a worker ends with its cell unreported, and the cell stays missing.
            text = str(report.longrepr or "")
            died = "crashed" in text or report.when == "???"
            self.results[cell] = CellResult(
                cell, Outcome.CRASH if died else Outcome.ERROR, fault=None if died else Fault.HARNESS,
                message=WORKER_DIED + (text.strip().splitlines() or [""])[-1][:300] if died else "harness error: " + _raised(report),
            )
        if result is not None and result.outcome not in (Outcome.PASS, Outcome.SKIPPED):
            # pytest's --lf reruns the tests that failed; a cell that did not pass is one to rerun, though its test passed.
            last_failed = self.config.pluginmanager.get_plugin("lfplugin")
            if last_failed is not None:
                last_failed.lastfailed[report.nodeid] = True
        if report.when == "teardown" and result is not None and result.carried_from is None:
            # Every tenth of the run, and at least every PROGRESS_EVERY_S seconds.
            tenth = 10 * len(self.results) // max(1, len(self.collected))
            if tenth > self._progress_tenth or time.time() - self._progress_said >= PROGRESS_EVERY_S:
                self._progress_said, self._progress_tenth = time.time(), tenth
                ran = [result for result in self.results.values() if result.carried_from is None]
                now = time.time()
                running = {cell: now - began for cell, began in self._began.items() if cell not in self.results}
                self._say(estimate.progress(ran, self._plan(), now - self.started, running))

    # Before xdist's own sessionfinish, which shuts its workers down (seconds to minutes while they close their
    # runners): every result is in by then, and a time limit that strikes during that shutdown must find the
    # reports written.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:  # nothing ran: the reports of the last real run stay as they are
            return
        self._run_cases_alone(session)
        with signals_deferred() as received:
            self._write_reports(session)
        if received:
            self._summary.append((f"{', '.join(received)} arrived while the reports were written; they were finished first", {}))

    def _run_cases_alone(self, session: pytest.Session) -> None:
        """The cells of every case that a confirmation found differing alone (harness.plugin.confirmation) that ran in a
        shared process before its case was marked: each runs alone now, side by side as the workers did, and is charted as
        it ran alone. A stopped run skips them (they keep their shared results, unconfirmed)."""
        cases = confirmation.cases_alone(alone_folder(self.config))
        cells = confirmation.still_shared(self.results.values(), cases) if cases and not self._why_stopped(session) else []
        if not cells:
            return
        self._say(f"{len(cases)} cases differed alone ({', '.join(sorted(cases))}): running alone the {len(cells)} of their "
                  "cells that ran in a shared process")
        done = confirmation.run_cases_alone(self.config, cells, threads=max(1, min(self._workers, len(cells))))
        self.results.update(done.settled)
        self._summary += [(text, {"red": True}) for text in done.not_run]
        if done.interrupted:
            self.stopped_by = self.stopped_by or "interrupted (Ctrl-C)"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """What the run wrote, after pytest's own summary of the tests."""
        for text, markup in self._summary:
            self._say(text, **markup)

    def _write_reports(self, session: pytest.Session) -> None:
        # Read here, not from the workers: a -k selection, or every case broken, must not hide them.
        problems = loaded(self.config).problems
        if problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.results:
            self._nothing_measured(session, problems)
            return
        missing = sorted(cell.id for cell in self.collected - set(self.results))
        fingerprint = self._fingerprint()
        fingerprint.vec_isa = vec_isa.recorded(os.path.join(run_caches(self.config), INDUCTOR_CACHE))
        digests = self._digests(fingerprint)
        for result in self.results.values():  # what a later run compares to carry the cell over (a carried cell's is the same)
            result.digest = digests.of(result.cell)
        part = shard_of(self.config)
        if part is not None:  # `harness report` checks that the parts it merges are all of them
            timings = self.config.getoption("shard_timings")
            fingerprint.shard = ShardPart(index=part.index, count=part.count, balanced_by=timings or "the estimate's row means")
            if timings:  # the same file under another path on another runner is the same split
                with open(timings, "rb") as f:
                    fingerprint.shard.timings_sha256 = hashlib.sha256(f.read()).hexdigest()
        results = Results(
            fingerprint=fingerprint,
            cells=list(self.results.values()),
            complete=not missing,
            missing=missing,
            wall_time_s=round(time.time() - self.started, 1),
            problems=[p.to_json() for p in problems],
            interrupted=self._why_stopped(session) if missing else None,
            prebuilt=self.processes.prebuilt(),
            timeline=self._timeline,
        )
        report_dir = final_report_folder(self.config, self.collected, results.complete)
        try:
            written = report.write(results, report_dir)
        except OutputNotWritten as exc:
            self._not_written(session, results, exc)
            return
        baseline_notes = carry_over.against_baseline(results, self.config.getoption("baseline"), self.config.getoption("accept"))
        counts: dict[str, int] = {}
        for c in results.cells:
            key = "env" if c.blamed_on else c.outcome.value
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        say = self._summary.append
        say((f"{len(results.cells)} cells ({summary}); wrote {', '.join(written)}", {}))
        if report_dir != report_folder(self.config, self.collected):
            say((f"this run stopped before every cell reported, so it wrote to {report_dir}, leaving the complete run's "
                 f"reports in {report_folder(self.config, self.collected)} as they were", {}))
        elif report_dir != DEFAULT_REPORT_DIR and not self.config.getoption("report_dir"):
            say((f"this run was part of the matrix, so it wrote to {report_dir}, leaving a whole run's reports in "
                 f"{DEFAULT_REPORT_DIR} as they were (--report-dir chooses)", {}))
        if missing:
            why = f" ({results.interrupted})" if results.interrupted else ""
            say((f"INCOMPLETE{why}, {len(missing)} cells never reported", {"red": True}))
        for problem in problems:
            say((f"LEFT OUT {problem}", {"red": True}))
        for note in baseline_notes:
            say((note, {}))

    def _fingerprint(self) -> Fingerprint:
        """The run's fingerprint, but for what only its end knows (the vector ISA its compiles found): this machine, read
        beside the first cells (waited for here), with the run's profile, workers, caches and options."""
        workers = getattr(self.config.option, "numprocesses", None)
        cache_dir = self.config.getoption("cache_dir")
        fingerprint = machine.fingerprint(self._read_this_machine().result() or machine.this_machine(),
                                          profile=PROFILES[profile_name(self.config)], workers=workers if isinstance(workers, int) else 1,
                                          caches=f"reused from {os.path.abspath(cache_dir)}" if cache_dir else "fresh")
        fingerprint.cases = [registry.resolved(spec) for spec in self.config.getoption("cases") or []]
        fingerprint.runner_threads = runner_threads(fingerprint.workers or 1)
        fingerprint.cells_per_process = cells_per_process(self.config)
        fingerprint.confirm = confirmation.policy(self.config)
        fingerprint.autotune_timing = autotune_timing.DESCRIBED[autotune_timing.chosen(self.config.getoption("perf"))]
        return fingerprint

    def _digests(self, fingerprint: Fingerprint) -> carry_over.Digests:
        """Each cell's digest, made once a run: the carry-over decision's serve the reports (nothing they hold changes)."""
        if self._made_digests is None:
            options = {"perf": self.config.getoption("perf"), "profile_dir": bool(self.config.getoption("profile_dir")),
                       "cell_timeout": self.config.getoption("cell_timeout")}
            self._made_digests = carry_over.Digests.of_run(fingerprint, loaded(self.config).cases, options, dict(os.environ))
        return self._made_digests

    def carried_ids(self) -> frozenset[str]:
        """The ids of the cells this run carries over from its --baseline (harness.plugin.carry_over), decided once, before
        any worker starts: it waits for this machine's facts and imports the cases, seconds where a baseline is given."""
        if self._carried is None:
            path, self._carried = self.config.getoption("baseline"), frozenset()
            if path and os.path.exists(path) and not self.config.getoption("full_run") and not self.config.option.collectonly:
                baseline = results_file.load(path)
                cells = matrix_cells(loaded(self.config).cases)
                self._carried = frozenset(c.id for c in carry_over.carried(baseline, self._digests(self._fingerprint()), cells))
                self._carried_from = carry_over.source_run(baseline, path)
        return self._carried

    def _not_written(self, session: pytest.Session, results: Results, exc: OutputNotWritten) -> None:
        """The reports could not replace the old ones (a full disk, a file that may not change): the old set stays, the
        run's results are kept where they can be, and the run exits 3 saying so, without a traceback."""
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        kept = None
        with contextlib.suppress(OSError):
            kept = os.path.join(tempfile.mkdtemp(prefix="triton-compat-matrix-"), "results.json")
            results_file.save(results, kept)
        where = (f"this run's results are in {kept} (the report command writes their reports from it)" if kept
                 else "this run's results could not be kept anywhere either")
        self._summary.append((f"REPORTS NOT WRITTEN: {exc}; {where}", {"red": True}))

    def _nothing_measured(self, session: pytest.Session, problems: list[Any]) -> None:
        """A run in which no cell reported writes no reports (they would replace a real chart with an empty one)
        and fails, saying why."""
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        left_out = f"{len(problems)} case modules or cases were left out: see LEFT OUT below"
        if self.collected:
            why = self._why_stopped(session) or "no collected cell reported"
            why = f"the run stopped before any of its {len(self.collected)} cells reported ({why})"
        elif problems and not loaded(self.config).cases:
            why = f"every case module or case given was left out ({left_out})"
        else:
            why = "no cell was selected (check -k, --lf, --deselect and the cases given)" + (f"; {left_out}" if problems else "")
        self._summary.append((f"no cell ran, so no reports were written ({locked_report_folder(self.config)} is as it was): {why}", {"red": True}))
        for problem in problems:
            self._summary.append((f"LEFT OUT {problem}", {"red": True}))

    def _why_stopped(self, session: pytest.Session) -> str | None:
        if self.stopped_by:
            return self.stopped_by
        worker = MatrixWorker.of(self.config)
        if session.exitstatus == pytest.ExitCode.INTERRUPTED or (worker and worker.interrupts and worker.interrupts.count):
            return "interrupted (Ctrl-C)"
        if session.shouldstop:
            return f"stopped: {session.shouldstop}"
        return None

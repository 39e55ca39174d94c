"""The matrix as a user runs it: pytest with xdist workers, the controller merging and writing reports."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from harness.model.results import load
from harness.plugin.report_lock import HOLDER_FILE, LOCK_FILE
from harness.reporting import picture, report
from tests.harness.conftest import PLANTED, run_python

REPORTS = ("results.json", "MATRIX.md", "SUPPORT.md")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER_MODULES = os.path.join(ROOT, "tests", "harness", "user_modules")


def run_matrix(tmp_path, selection, workers=2, extra=()):
    reports = tmp_path / "reports"
    proc = run_python(
        [sys.executable, "-m", "pytest", "-n", str(workers), "-q", "-p", "no:cacheprovider",
         f"--cases={PLANTED}", f"--report-dir={reports}", "--matrix-profile=quick", "--cell-timeout=120", "-k", selection,
         *extra, "--matrix"],
        cwd=ROOT, timeout=600,
    )
    results = json.loads((reports / "results.json").read_text()) if (reports / "results.json").exists() else None
    return proc, results, reports


def outcomes(results):
    return {c["cell"]: c for c in results["cells"]}


ON_GPU = torch.cuda.is_available()
# fault case -> (outcome, stage, what its message or error type says), as recorded on this machine
FAULTS = {
    "planted_segfault": ("crash", "run", "SIGSEGV"),
    "planted_abort": ("crash", "run", "SIGABRT"),
    "planted_hang": ("timeout", "run", "no result after 12 s"),
    # a GPU kernel (or the interpreter) that never ends, in plain eager too: the case's, at the cell's limit, shorter than the check's
    "planted_spins": ("error", "run", "called once in plain eager on the case's example input"),
    "planted_out_of_memory": ("fail", "run", "CUDA out of memory" if ON_GPU else "can't allocate memory"),
    # an illegal address poisons the CUDA context (the runner is replaced); the interpreter segfaults
    "planted_illegal_address": (("fail", "crash"), "run", "illegal memory access" if ON_GPU else "SIGSEGV"),
    "planted_kills_worker": ("crash", None, "the pytest worker running this cell died"),
}
HEALTHY = [f"planted_ok-{w}-eager" for w in ("raw", "triton_op", "custom_op", "control")] + ["planted_wrong-raw-eager"]
COMPILED = ["planted_raises_at_trace-raw-compile_fullgraph"]


def test_a_cell_that_differs_alone_is_charted_as_it_runs_alone_and_every_cell_of_its_case_then_runs_alone(tmp_path):
    # planted_wears_out_its_process goes wrong once its process has launched it WORN_AFTER times, which no one eager cell
    # of it does: as FlagGems's kernel cache, filled by an earlier cell, changed what Dynamo traced in the next.
    selection = "planted_wears_out_its_process and eager and not train"
    proc, results, reports = run_matrix(tmp_path / "unconfirmed", selection, workers=0, extra=["--cells-per-process=0", "--confirm=none"])
    assert results["fingerprint"]["cells_per_process"] == 0
    worn = [c for c in outcomes(results).values() if c["outcome"] == "wrong"]  # the planted state is real: a shared process shows it
    assert worn and all("differs from the reference" in c["message"] for c in worn), proc.stdout[-3000:]
    assert "what a cell's code left in its process could reach the next" in (reports / "MATRIX.md").read_text()

    proc, results, reports = run_matrix(tmp_path / "confirmed", selection, workers=0, extra=["--cells-per-process=0", "--confirm=sample"])
    cells = outcomes(results)
    assert len(cells) == 5 and {c["outcome"] for c in cells.values()} == {"pass"}, proc.stdout[-3000:]  # each as it runs alone
    differed = [c for c in cells.values() if c["confirmation"]["agreed"] is False]
    assert differed and all(c["confirmation"]["shared"]["outcome"] == "wrong" and c["confirmation"]["alone"]["outcome"] == "pass"
                            for c in differed), cells
    # The cells before the one that differed ran alone at the end, the cells after it ran alone from the start: none kept
    # an outcome of a shared process unconfirmed.
    assert all(c.get("confirmation") for c in cells.values()), cells
    matrix = (reports / "MATRIX.md").read_text()
    assert "case `planted_wears_out_its_process` depends on what ran before it in its process" in matrix
    assert re.search(f"`{differed[0]['cell']}` shared `wrong[^`]*`, alone `pass`", matrix), matrix[:3000]
    assert re.search(r"confirmed alone \(`--confirm=sample`.*\): 5 cells .*\*\*\d agreed, [1-9] differed\*\*", matrix), matrix[:3000]
    assert "(alone; differed shared)" in matrix


def test_a_launcher_that_passes_only_in_a_warm_process_is_caught_by_the_sample_and_charted_as_it_runs_alone(tmp_path):
    # planted_warmed_up is off by one for its process's first launches: every cell passes after another cell of
    # the case in a shared process, and fails alone. Nothing in a shared run fails but its first cell, so only the sample
    # of passing cells can catch it: one cell in SAMPLE_ONE_IN by its id, here planted_warmed_up-triton_op-eager.
    from harness.model.cell import Cell
    from harness.plugin.confirmation import sampled

    selection = "planted_warmed_up and eager and not train"
    proc, results, reports = run_matrix(tmp_path, selection, workers=0, extra=["--cells-per-process=0", "--confirm=sample"])
    cells = outcomes(results)
    assert len(cells) == 5, proc.stdout[-3000:]
    caught = [c for c in cells.values() if c.get("confirmation", {}).get("why") == "sampled"]
    assert caught and all(sampled(Cell.parse(c["cell"])) and c["confirmation"]["agreed"] is False for c in caught), cells
    assert all(c["confirmation"]["shared"]["outcome"] == "pass" and c["outcome"] == "wrong" for c in caught), caught
    # Every cell that launches the kernel is then charted as it runs alone, as a new interpreter runs it: wrong.
    launching = {cell: c["outcome"] for cell, c in cells.items() if "-control-" not in cell}
    assert set(launching.values()) == {"wrong"}, launching
    assert "case `planted_warmed_up` depends on what ran before it in its process" in (reports / "SUPPORT.md").read_text()


def test_each_cell_runs_in_a_process_of_its_own_with_cells_per_process_one(tmp_path):
    proc, results, reports = run_matrix(tmp_path, "planted_wears_out_its_process and eager and not train", workers=0,
                                        extra=["--cells-per-process=1", "--confirm=none"])
    cells = outcomes(results)
    assert len(cells) == 5 and {c["outcome"] for c in cells.values()} == {"pass"}, proc.stdout[-3000:]
    assert results["fingerprint"]["cells_per_process"] == 1
    assert "runner processes: a fresh one for every cell" in (reports / "MATRIX.md").read_text()


def test_a_run_without_workers_that_a_pytest_worker_starts_is_a_run_without_workers(tmp_path):
    # It inherits the pytest worker's PYTEST_XDIST_WORKER and PYTEST_XDIST_WORKER_COUNT. Read as its own, they gave its
    # runners another run's thread count, which its zygote and runner template (started for one worker) refused: every
    # runner was then started with subprocess, 6-8 s of CPU each on the CI machine instead of a fork's fraction of one.
    env = {**os.environ, "PYTEST_XDIST_WORKER": "gw3", "PYTEST_XDIST_WORKER_COUNT": "4"}
    proc = run_python([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", f"--cases={PLANTED}",
                       f"--report-dir={tmp_path / 'reports'}", "--matrix-profile=quick", "-k", "planted_ok-raw-eager",
                       f"--runner-logs={tmp_path / 'logs'}", "--matrix"], cwd=ROOT, env=env, timeout=600)
    results = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert [(c["outcome"], c["worker"]) for c in results["cells"]] == [("pass", "main")], proc.stdout[-3000:]
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    ready = (tmp_path / "logs" / "runner-main-0.log").read_text()
    assert ready.startswith("runner ready (forked by the runner template "), (logs, ready[-2000:])


@pytest.mark.skipif(sys.platform != "linux", reason="kills a process by pid")
def test_every_fault_in_one_run_is_recorded_and_no_cell_is_lost(tmp_path):
    """Seven faults and a case module that fails to import, in one run with two workers: each fault is its own
    cell's outcome, every other cell keeps its real outcome, and the device works for the cells after a fault.
    The controller merges what both workers sent into the three reports. The runners are forked by the run's runner template."""
    cells = [f"{case}-raw-eager" for case in FAULTS] + HEALTHY + COMPILED
    proc, results, reports = run_matrix(tmp_path, " or ".join(f"test_cell[{c}]" for c in cells),
                                        extra=["--cell-timeout=eager=12", f"--cases={os.path.join(USER_MODULES, 'broken_import.py')}",
                                               f"--runner-logs={tmp_path / 'logs'}"])
    assert proc.returncode == 1  # a worker died and a module failed to import: pytest says so
    recorded = outcomes(results)
    assert results["missing"] == [] and results["complete"] is True and results["interrupted"] is None
    assert set(recorded) == set(cells), proc.stdout[-3000:]
    for case, (outcome, stage, says) in FAULTS.items():
        cell = recorded[f"{case}-raw-eager"]
        assert cell["outcome"] in ((outcome,) if isinstance(outcome, str) else outcome), (case, cell)
        assert cell["stage"] == stage, (case, cell)
        assert says in f"{cell['error_type']}: {cell['message']} {cell['signal']} {' '.join(cell['log_tail'])}", (case, cell)
        if outcome == "timeout":  # killed at its limit, not long after
            assert 12 <= cell["timings"]["wall"] < 60, cell["timings"]
    assert {c: recorded[c]["outcome"] for c in HEALTHY} == {**{c: "pass" for c in HEALTHY}, "planted_wrong-raw-eager": "wrong"}
    assert "KeyError: 'blocks'" in results["problems"][0]["message"]
    # Each worker's cells in the order it ran them: whatever a fault left behind, the next cell was unharmed.
    by_worker: dict[str, list[dict]] = {}
    for cell in sorted(recorded.values(), key=lambda c: c["timings"]["finished"]):
        by_worker.setdefault(cell["worker"], []).append(cell)
    after_a_fault = [b for run in by_worker.values() for a, b in zip(run, run[1:]) if a["case"] in FAULTS and b["cell"] in HEALTHY]
    assert after_a_fault, by_worker
    assert all(c["outcome"] in ("pass", "wrong") and c["cell"] in HEALTHY for c in after_a_fault)
    trace = recorded["planted_raises_at_trace-raw-compile_fullgraph"]
    assert (trace["outcome"], trace["stage"]) == ("fail", "compile")
    fingerprint = results["fingerprint"]
    assert fingerprint["runner_threads"] == int(os.environ.get("OMP_NUM_THREADS") or max(1, os.cpu_count() // 2))
    assert fingerprint["caches"] == "fresh" and fingerprint["compiler"]["resolved"]
    matrix = (reports / "MATRIX.md").read_text()
    assert "CRASH SIGSEGV @run" in matrix and "planted: this launcher refuses to be traced" in matrix
    assert "| [eager](MATRIX.md#eager)" in (reports / "SUPPORT.md").read_text()
    # Every runner process, the replacements after each fault and the new worker's included, was forked by the run's runner
    # template, though a worker's import path gained the case file's folder as it collected.
    ready = [line for log in (tmp_path / "logs").iterdir() for line in log.read_text().splitlines() if line.startswith("runner ready")]
    assert len(ready) >= 5 and all(line.startswith("runner ready (forked by the runner template ") for line in ready), ready


def _start_matrix(tmp_path, selection, workers, report_dir=True):
    """A matrix run in its own process group (as a terminal's foreground job), its output line by line; into
    tmp_path/reports, named by --report-dir or, without it, as the default folder of a run started in tmp_path."""
    env = {**os.environ, "TCM_PLANTED_HANGING": str(tmp_path / "hanging"), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-n", str(workers), "-v", "-p", "no:cacheprovider", f"--cases={tmp_path / 'planted_copy.py'}",
         *([f"--report-dir={tmp_path / 'reports'}"] if report_dir else []), "--matrix-profile=quick", "-k", selection, "--matrix"],
        cwd=ROOT if report_dir else tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        # Ctrl-C's default action, as a terminal's foreground job has it: a shell's background job (`cmd &`, as
        # a CI script may start this test run) inherits SIGINT ignored, and the run would rightly ignore it too.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _running(pid):
    """Whether the process exists and is not a zombie waiting for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="signals processes by pid")
@pytest.mark.parametrize("how", ["ctrl-c", "ctrl-c twice", "sigterm", "sigkill"])
def test_an_interrupted_run_leaves_the_complete_reports_and_writes_its_own_to_partial_marked_incomplete(tmp_path, how):
    """Whether the folder is --report-dir (Ctrl-C, SIGKILL) or the default (SIGTERM), a complete chart in it
    stays as it was: an interrupted run writes to its `partial` folder, its reports marked incomplete."""
    shutil.copy(PLANTED, tmp_path / "planted_copy.py")  # its path tells this run's runner processes apart
    reports = tmp_path / "reports"
    report.write(load(os.path.join(ROOT, "tests", "harness", "data", "results-v1.json")), str(reports))
    before = {name: (reports / name).read_bytes() for name in REPORTS}
    done = ["planted_ok-raw-eager"]
    # A worker per cell: xdist would queue a second cell behind the hanging one on its worker.
    proc = _start_matrix(tmp_path, " or ".join(f"test_cell[{c}]" for c in [*done, "planted_hang-raw-eager"]), workers=2,
                         report_dir=how != "sigterm")
    output: list[str] = []
    # Read what arrives, not lines: pytest ends a test's status line only when it starts the next one.
    threading.Thread(target=lambda: output.extend(iter(lambda: os.read(proc.stdout.fileno(), 65536).decode(errors="replace"), "")), daemon=True).start()
    deadline = time.monotonic() + 120
    # The test's id starts at the run's rootdir: the repository's, or tmp_path for a run started there.
    while not ((tmp_path / "hanging").exists() and all(re.search(rf"PASSED \S*::test_cell\[{c}\]", "".join(output)) for c in done)):
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended or stalled before the hanging cell began: " + "".join(output)[-2000:]
        time.sleep(0.5)
    {"ctrl-c": lambda: os.killpg(proc.pid, signal.SIGINT), "sigterm": lambda: proc.send_signal(signal.SIGTERM),
     "sigkill": lambda: proc.send_signal(signal.SIGKILL),
     # a second Ctrl-C while the run stops: every process of it ignores it (no traceback from wherever it landed)
     "ctrl-c twice": lambda: (os.killpg(proc.pid, signal.SIGINT), time.sleep(0.5), os.killpg(proc.pid, signal.SIGINT))}[how]()
    if how == "sigterm":
        # Sent to the controller alone, as `kill` or bench sends it: the controller interrupts its workers as Ctrl-C
        # does, so the hanging cell's runner is killed before the reports are written, not left to xdist's shutdown.
        runner = int((tmp_path / "hanging").read_text())
        while not (reports / "partial" / "results.json").exists() and proc.poll() is None:
            time.sleep(0.05)
        assert not _running(runner), "the hanging cell's runner was still running when the reports were written"
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        processes = subprocess.run(["ps", "-o", "pid,ppid,pgid,etime,stat,args", "-g", str(proc.pid)], capture_output=True, text=True).stdout
        processes += subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True).stdout  # its runners
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"the run did not end within 120 s of {how}; its output:\n{''.join(output)[-3000:]}\nits processes:\n{processes}")

    partial = reports / "partial"
    assert {name: (reports / name).read_bytes() for name in REPORTS} == before  # the complete reports stand, untouched
    if how == "sigkill":  # no chance to write
        assert not partial.exists()
    else:
        said = "".join(output)  # where it wrote, and why there (a -k run: part of the matrix; stopped: incomplete)
        assert f"so it wrote to {'reports/partial' if how == 'sigterm' else partial}, leaving " in said, said[-2000:]
        results = json.loads((partial / "results.json").read_text())
        assert results["complete"] is False and results["missing"] == ["planted_hang-raw-eager"]
        assert results["interrupted"] == ("SIGTERM" if how == "sigterm" else "interrupted (Ctrl-C)")
        assert "Traceback" not in said, said[-3000:]
        assert {c["cell"]: c["outcome"] for c in results["cells"]} == {"planted_ok-raw-eager": "pass"}
        for name in ("SUPPORT.md", "MATRIX.md"):
            assert "**incomplete run, " in (partial / name).read_text() and "planted_hang-raw-eager" in (partial / name).read_text()
    # No temporary file is left behind, nor the report folder's lock (a SIGKILLed run cannot remove it; the
    # kernel released it, so the next run takes it).
    left = {"partial", *REPORTS, picture.FILENAME, *((LOCK_FILE, HOLDER_FILE) if how == "sigkill" else ())}
    assert not [p.name for p in reports.iterdir() if p.name not in left], "a temporary file was left behind"
    # No runner process outlives its run, not even the one stuck in the hanging cell.
    deadline = time.monotonic() + 30
    while subprocess.run(["pgrep", "-f", str(tmp_path / "planted_copy.py")], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True).stdout


def test_a_worker_that_ends_on_ctrl_c_before_its_controller_does_leaves_its_cell_unreported_not_crashed():
    # The terminal's Ctrl-C reaches every process at once; on a loaded machine a worker can stop, and xdist report its
    # cell as the crashed worker's, before the controller's own KeyboardInterrupt is raised. Recorded as a crash, the
    # cell made the interrupted run complete, and its reports replaced the complete chart.
    from types import SimpleNamespace

    from harness.plugin.controller import MatrixController

    controller = MatrixController.__new__(MatrixController)
    controller.results, controller.stopped_by = {}, None
    crashed = SimpleNamespace(nodeid="harness/plugin/matrix.py::test_cell[planted_hang-raw-eager]", failed=True, when="???",
                              user_properties=[], longrepr="worker 'gw1' crashed while running 'test_cell[planted_hang-raw-eager]'")
    controller.pytest_testnodedown(node=None, error="keyboard-interrupt")
    controller.pytest_runtest_logreport(crashed)
    assert controller.results == {} and controller.stopped_by == "interrupted (Ctrl-C)"
    # A worker that dies of anything else, in a run not stopped, is its cell's crash.
    controller = MatrixController.__new__(MatrixController)
    controller.results, controller.stopped_by = {}, None
    controller.pytest_testnodedown(node=None, error="Not properly terminated")
    controller.pytest_runtest_logreport(crashed)
    assert [r.outcome.value for r in controller.results.values()] == ["crash"] and controller.stopped_by is None


def test_a_harness_error_that_left_no_result_is_recorded_with_its_message_and_where_it_was_raised():
    # pytest's report of it ends with "file:line: ExceptionType"; that line alone was the cell's message, and a runner
    # process that did not start lost why (its event, its log's last lines).
    from types import SimpleNamespace

    from _pytest._code import ExceptionInfo

    from harness.model.errors import RunnerDied
    from harness.plugin.controller import MatrixController

    try:
        raise RunnerDied("the runner process did not start: eof; log: Fatal Python error: Segmentation fault")
    except RunnerDied as exc:
        longrepr = ExceptionInfo.from_exception(exc).getrepr()
    controller = MatrixController.__new__(MatrixController)
    controller.results, controller.stopped_by = {}, None
    failed = SimpleNamespace(nodeid="harness/plugin/matrix.py::test_cell[planted_ok-raw-eager]", failed=True, when="call",
                             user_properties=[], longrepr=longrepr)
    controller.pytest_runtest_logreport(failed)
    [result] = controller.results.values()
    assert (result.outcome.value, result.fault.value) == ("error", "harness")
    assert result.message.startswith("harness error: harness.model.errors.RunnerDied: the runner process did not start: eof; "
                                     "log: Fatal Python error: Segmentation fault (tests/harness/test_pytest_matrix.py:"), result.message


def test_baseline_mode_fails_only_on_change_and_accept_rewrites_it(tmp_path):
    baseline = tmp_path / "baseline.json"  # workers=0: comparing with the baseline is the controller's alone
    selection = " or ".join(f"test_cell[planted_{c}-raw-eager]" for c in ("wrong", "ok", "unwritten"))
    proc, _, _ = run_matrix(tmp_path, selection, workers=0, extra=[f"--baseline={baseline}", "--accept"])
    assert proc.returncode == 0 and "accepted this run's outcomes of " in proc.stdout

    # Against a baseline in which the wrong cell passed and the passing cell failed: both cells fail their
    # tests. The unwritten cell also passed there, but is labelled flaky (not checked), and a baseline cell
    # that did not run is named; neither fails a test.
    data = json.loads(baseline.read_text())
    cells = {c["cell"]: c for c in data["cells"]}
    cells["planted_wrong-raw-eager"].update(outcome="pass", stage=None, error_type=None, message=None)
    cells["planted_ok-raw-eager"].update(outcome="fail", stage="run", error_type="RuntimeError", message="old failure")
    cells["planted_unwritten-raw-eager"].update(outcome="pass", stage=None, error_type=None, message=None, flaky="planted: varies by design")
    cells["planted_segfault-raw-eager"] = dict(cells["planted_wrong-raw-eager"], cell="planted_segfault-raw-eager", case="planted_segfault")
    data["cells"] = list(cells.values())
    baseline.write_text(json.dumps(data))
    # --full-run: the edited baseline's digests are this run's, so without it its cells would be carried over, not checked.
    proc, _, _ = run_matrix(tmp_path, selection, workers=0, extra=[f"--baseline={baseline}", "--full-run"])
    assert proc.returncode == 1
    assert "REGRESSED: planted_wrong-raw-eager passed in the baseline, now WRONG" in proc.stdout
    assert "IMPROVED: planted_ok-raw-eager was fail @run" in proc.stdout
    assert f"--baseline={baseline} --full-run --accept`" in proc.stdout and "`triton-compat-matrix run -n 0 -q " in proc.stdout
    failed = {line.split("[", 1)[1].split("]", 1)[0] for line in proc.stdout.splitlines() if line.startswith("FAILED ")}
    assert failed == {"planted_wrong-raw-eager", "planted_ok-raw-eager"}, proc.stdout[-3000:]
    assert "REGRESSED: planted_unwritten" not in proc.stdout and "IMPROVED: planted_unwritten" not in proc.stdout
    assert "1 baseline cells did not run: planted_segfault-raw-eager" in proc.stdout

    # Accepting from a run of one cell takes that cell's outcome and keeps the baseline's other cells (--full-run: measured
    # again, not carried over from the edited baseline).
    proc, _, _ = run_matrix(tmp_path, "test_cell[planted_wrong-raw-eager]", workers=0,
                            extra=[f"--baseline={baseline}", "--full-run", "--accept"])
    assert proc.returncode == 0 and "accepted this run's outcomes of 1 cells into the baseline" in proc.stdout, proc.stdout[-3000:]
    accepted = {c.cell.id: c for c in load(str(baseline)).cells}
    assert set(accepted) == set(cells) and accepted["planted_wrong-raw-eager"].outcome.value == "wrong"
    assert accepted["planted_ok-raw-eager"].message == "old failure" and accepted["planted_unwritten-raw-eager"].flaky


def _run_cases(tmp_path, cases, selection, workers=1):
    reports = tmp_path / "reports"
    proc = run_python(
        [sys.executable, "-m", "pytest", "-n", str(workers), "-q", "-p", "no:cacheprovider", *(f"--cases={c}" for c in cases),
         f"--report-dir={reports}", "--matrix-profile=quick", "-k", selection, "--matrix"],
        cwd=ROOT, timeout=600,
    )
    results = json.loads((reports / "results.json").read_text()) if (reports / "results.json").exists() else None
    return proc, results, reports


def test_a_users_own_module_runs_alone_or_beside_the_builtin_cases(tmp_path):
    """The README's route: a module outside cases/, named with --cases; only its cases unless `cases` is named too."""
    proc, results, reports = _run_cases(tmp_path / "alone", ["examples/my_kernels.py"], "eager")
    assert proc.returncode == 0, proc.stdout[-3000:]
    cells = outcomes(results)
    assert {c["case"] for c in cells.values()} == {"my_leaky_relu"}
    assert cells["my_leaky_relu-raw-eager"]["outcome"] == "pass"
    assert cells["my_leaky_relu-triton_op-eager"]["outcome"] == "pass"
    assert results["problems"] == []
    assert "my_leaky_relu" in (reports / "SUPPORT.md").read_text()

    proc, results, _ = _run_cases(tmp_path / "both", ["harness.cases", "examples/my_kernels.py"], "(add-raw-eager and not scaled_add and not tma_add) or my_leaky_relu-raw-eager",
                                  workers=0)  # the run above has the module imported by an xdist worker
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert set(outcomes(results)) == {"add-raw-eager", "my_leaky_relu-raw-eager"}


def test_malformed_modules_and_cases_are_reported_and_the_good_cases_still_run(tmp_path):
    names = ["malformed.py", "duplicate.py", "broken_import.py", "no_cases.py", "missing.py"]
    proc, results, reports = _run_cases(tmp_path, [os.path.join(USER_MODULES, n) for n in names], "user_good and eager", workers=0)
    assert proc.returncode == 1  # the run fails, so CI notices
    assert outcomes(results)["user_good-raw-eager"]["outcome"] == "pass"
    problems = {(os.path.basename(p["module"]), p["case"]): p["message"] for p in results["problems"]}
    assert problems[("malformed.py", "no_reference")].startswith("no reference: give reference=")
    assert problems[("malformed.py", "launcher_without_k")].startswith("the launcher never reads ")
    assert problems[("malformed.py", "unknown_dtype")].startswith("unknown dtype 'float16'")
    assert problems[("malformed.py", "inputs_do_not_match")].startswith("make_inputs gives 2 inputs but the launcher takes 1")
    assert problems[("duplicate.py", "user_good")].startswith("defined twice, in ")
    assert "line 6" in problems[("broken_import.py", None)] and "KeyError: 'blocks'" in problems[("broken_import.py", None)]
    assert problems[("no_cases.py", None)].startswith("defines no Case")
    assert problems[("missing.py", None)].startswith("no such file")
    assert len(problems) == 8
    support = (reports / "SUPPORT.md").read_text()
    assert "**left out**" in support and "no_reference" in support
    assert "LEFT OUT" in proc.stdout


def test_selecting_a_malformed_case_by_name_still_shows_why_it_is_missing(tmp_path):
    proc, results, _ = _run_cases(tmp_path, [os.path.join(USER_MODULES, "malformed.py")], "no_reference", workers=0)
    assert proc.returncode == 1
    assert "LEFT OUT tests/harness/user_modules/malformed.py: case 'no_reference': no reference: give reference=" in proc.stdout.replace(ROOT + "/", "")
    assert proc.stdout.count("triton-compat-matrix: LEFT OUT ") == 4
    # No cell ran, so no reports: they would replace a chart with an empty one.
    assert results is None and "no cell ran, so no reports were written" in proc.stdout


def test_repeat_runs_the_matrix_n_times_and_finds_no_difference_in_deterministic_cells(tmp_path):
    selection = "test_cell[planted_ok-raw-eager] or test_cell[planted_wrong-raw-eager] or test_cell[planted_unwritten-raw-eager]"
    proc = run_python(
        [sys.executable, "-m", "harness", "repeat", "--runs", "2", "--out", str(tmp_path / "repeat"), "--",
         "-n", "0", "-p", "no:cacheprovider", f"--cases={PLANTED}", "--matrix-profile=quick", "-k", selection],
        cwd=ROOT, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "repeat: 0 cells differ across 2 runs, 3 are the same in every run" in proc.stdout
    for n in (1, 2):
        assert len(json.loads((tmp_path / "repeat" / f"run-{n}" / "results.json").read_text())["cells"]) == 3
    assert "**0 cells differ across the 2 runs**, 3 are the same in every run" in (tmp_path / "repeat" / "REPEAT.md").read_text()


def test_outcomes_show_in_verbose_output_junit_xml_and_last_failed_and_a_selection_keeps_the_whole_runs_reports(tmp_path):
    """A cell's test passes whatever its outcome, but pytest's tools see the outcome: -v prints it, junit XML
    holds it as JSON, and --lf reruns the cells that did not pass. A run of part of the matrix, with no
    --report-dir, writes to reports/partial and leaves reports/ (a whole run's chart) alone."""
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "results.json").write_text("a whole run's chart")
    cells = ["planted_ok-raw-eager", "planted_wrong-raw-eager", "planted_raises_at_trace-raw-compile_fullgraph"]

    def run(*extra):
        return run_python([sys.executable, "-m", "pytest", "--matrix", "-n", "0", "-v", f"--cases={PLANTED}", "--matrix-profile=quick",
                           "-o", f"cache_dir={tmp_path / 'cache'}", *extra], cwd=tmp_path, timeout=600)

    proc = run("-k", " or ".join(f"test_cell[{c}]" for c in cells), f"--junitxml={tmp_path / 'junit.xml'}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "::test_cell[planted_wrong-raw-eager] WRONG" in proc.stdout and "::test_cell[planted_ok-raw-eager] PASSED" in proc.stdout
    assert "::test_cell[planted_raises_at_trace-raw-compile_fullgraph] FAIL" in proc.stdout
    assert "1 passed" in proc.stdout and ", 1 fail, 1 wrong in " in proc.stdout
    assert "triton-compat-matrix: 3 cells (of the " in proc.stdout and "profile quick: " in proc.stdout  # what it will do
    assert "triton-compat-matrix: 3/3 cells in " in proc.stdout  # how far it got
    assert (tmp_path / "reports" / "results.json").read_text() == "a whole run's chart"
    assert len(json.loads((tmp_path / "reports" / "partial" / "results.json").read_text())["cells"]) == 3

    import xml.etree.ElementTree as ET

    properties = {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
                  for case in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    wrong = properties["test_cell[planted_wrong-raw-eager]"]
    assert (wrong["tcm_outcome"], wrong["tcm_stage"]) == ("wrong", "run") and wrong["tcm_message"]
    assert json.loads(wrong["tcm_result"])["outcome"] == "wrong"
    assert properties["test_cell[planted_raises_at_trace-raw-compile_fullgraph]"]["tcm_stage"] == "compile"

    proc = run("--lf", f"--report-dir={tmp_path / 'rerun'}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    rerun = {c["cell"] for c in json.loads((tmp_path / "rerun" / "results.json").read_text())["cells"]}
    assert rerun == {"planted_wrong-raw-eager", "planted_raises_at_trace-raw-compile_fullgraph"}


def test_without_matrix_the_installed_plugin_changes_no_other_pytest_run(tmp_path):
    (tmp_path / "test_mine.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef cell():\n    return 1\n\ndef test_cell(cell):\n    assert cell == 1\n")
    proc = run_python([sys.executable, "-m", "pytest", "-v", "test_mine.py"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and "test_mine.py::test_cell PASSED" in proc.stdout, proc.stdout[-2000:]
    assert "triton-compat-matrix:" not in proc.stdout and not (tmp_path / "reports").exists()
    assert "triton-compat-matrix" in proc.stdout  # loaded, as the plugins line says
    proc = run_python([sys.executable, "-m", "pytest", "--cases=x.py", "test_mine.py"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 4 and "--cases is an option of the matrix: add --matrix" in proc.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="signals processes by pid")
def test_bench_passes_an_interrupt_to_its_matrix_run_and_reports_the_cells_that_ran(tmp_path):
    shutil.copy(PLANTED, tmp_path / "planted_copy.py")
    env = {**os.environ, "TCM_PLANTED_HANGING": str(tmp_path / "hanging"), "PYTHONUNBUFFERED": "1"}
    # As `timeout -s INT` sends it: to bench alone. Its arguments are pytest's with no `--` before them.
    proc = subprocess.Popen([sys.executable, "-m", "harness", "bench", "--report-dir", str(tmp_path / "reports"), "-n", "2",
                             f"--cases={tmp_path / 'planted_copy.py'}", "--matrix-profile=quick", "-k",
                             "test_cell[planted_ok-raw-eager] or test_cell[planted_hang-raw-eager]"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 180
    while not (tmp_path / "hanging").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-3000:] if proc.poll() is not None else "stalled"
        time.sleep(0.5)
    time.sleep(3)  # the other cell finishes
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=180)
    results = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert results["complete"] is False and "planted_hang-raw-eager" in results["missing"], out[-3000:]
    assert results["interrupted"] == "interrupted (Ctrl-C)"
    assert "INCOMPLETE: " in out and "wall time" in out, out[-3000:]


def test_the_commands_that_run_pytest_pass_on_the_arguments_they_do_not_know_in_order():
    from harness.tools.launch import matrix_command

    command = matrix_command(["-k", "aoti and strict", "--cases", "my.py", "-p", "no:randomly"], "out")
    assert command[command.index("--matrix") + 1:] == ["-n", "auto", "-k", "aoti and strict", "--cases=my.py", "-p", "no:randomly"]
    from harness.__main__ import main

    with pytest.raises(SystemExit):
        main(["diff", "a.json", "b.json", "-k", "x"])  # only run, bench and repeat pass arguments on


SIBLING_KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)
'''

SIBLING_CASE = '''
import torch
import triton

from harness import Case, inputs
from {module} import double_kernel


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.double_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


CASE = Case(name="{name}", kernels=(double_kernel,), launch=launch, reference=lambda x: x * 2, make_inputs=inputs.randn(1),
            shapes=inputs.shapes(1024), example_shape=(64,), max_batch=1024)
'''


def test_a_case_file_imports_the_modules_beside_it_and_one_in_a_package_its_relative_imports(tmp_path):
    """As pytest imports a test module: a case file's folder is importable (mycases.py imports mykernels.py beside it),
    and a case file inside a package is imported by its dotted name (mylib/cases.py imports .kernels)."""
    user = tmp_path / "user"
    (user / "mylib").mkdir(parents=True)
    (user / "mykernels.py").write_text(SIBLING_KERNELS)
    (user / "mycases.py").write_text(SIBLING_CASE.format(module="mykernels", name="sibling_double"))
    (user / "mylib" / "__init__.py").write_text("")
    (user / "mylib" / "kernels.py").write_text(SIBLING_KERNELS)
    (user / "mylib" / "cases.py").write_text(SIBLING_CASE.format(module=".kernels", name="package_double"))
    specs = [str(user / "mycases.py"), str(user / "mylib" / "cases.py")]
    proc, results, _ = _run_cases(tmp_path, specs, "raw-eager", workers=0)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert results["problems"] == []
    cells = outcomes(results)
    assert cells["sibling_double-raw-eager"]["outcome"] == "pass" and cells["package_double-raw-eager"]["outcome"] == "pass"
    # `harness cases` lists them from anywhere, as the run does.
    listed = run_python([sys.executable, "-m", "harness", "cases", *(f"--cases={s}" for s in specs)], cwd=tmp_path, timeout=300)
    assert listed.returncode == 0, listed.stderr
    assert "sibling_double" in listed.stdout and "package_double" in listed.stdout

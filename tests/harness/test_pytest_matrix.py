"""The matrix as a user runs it: pytest with xdist workers, the controller merging and writing reports."""

import json
import os
import subprocess
import sys

import pytest

from tests.harness.conftest import PLANTED

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_matrix(tmp_path, selection, workers=2, extra=()):
    reports = tmp_path / "reports"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", str(workers), "-q", "-p", "no:cacheprovider",
         f"--cases={PLANTED}", f"--report-dir={reports}", "--matrix-profile=ci", "--cell-timeout=120", "-k", selection,
         *extra, "tests/test_matrix.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    results = json.loads((reports / "results.json").read_text()) if (reports / "results.json").exists() else None
    return proc, results, reports


def outcomes(results):
    return {c["cell"]: c for c in results["cells"]}


def test_failing_cells_are_data_and_reports_are_written(tmp_path):
    cells = [f"{case}-raw-{path}" for case in ("planted_wrong", "planted_segfault", "planted_ok", "planted_raises_at_trace")
             for path in ("eager", "compile_fullgraph")]
    proc, results, reports = run_matrix(tmp_path, " or ".join(f"test_cell[{c}]" for c in cells))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cells = outcomes(results)
    assert len(cells) == 8
    assert results["complete"] is True and results["missing"] == []
    assert results["fingerprint"]["runner_threads"] == int(os.environ.get("OMP_NUM_THREADS") or max(1, os.cpu_count() // 2))
    assert cells["planted_wrong-raw-eager"]["outcome"] == "wrong"
    assert cells["planted_segfault-raw-eager"]["outcome"] == "crash"
    assert cells["planted_segfault-raw-eager"]["signal"] == "SIGSEGV"
    assert cells["planted_ok-raw-eager"]["outcome"] == "pass"
    trace = cells["planted_raises_at_trace-raw-compile_fullgraph"]
    assert (trace["outcome"], trace["stage"]) == ("fail", "compile")
    matrix = (reports / "MATRIX.md").read_text()
    assert "planted: this launcher refuses to be traced" in matrix
    assert "CRASH SIGSEGV @run" in matrix
    support = (reports / "SUPPORT.md").read_text()
    assert "| [eager](MATRIX.md#eager)" in support
    assert results["fingerprint"]["compiler"]["resolved"]


@pytest.mark.skipif(sys.platform != "linux", reason="kills a process by pid")
def test_a_killed_worker_is_its_cells_crash_not_a_missing_cell(tmp_path):
    proc, results, _ = run_matrix(tmp_path, "test_cell[planted_kills_worker-raw-eager] or test_cell[planted_ok-raw-eager]")
    assert proc.returncode == 1  # pytest says a worker died; the matrix still has every cell
    cells = outcomes(results)
    killed = cells["planted_kills_worker-raw-eager"]
    assert killed["outcome"] == "crash"
    assert "pytest worker running this cell died" in killed["message"]
    assert cells["planted_ok-raw-eager"]["outcome"] == "pass"
    assert results["missing"] == []


def test_baseline_mode_fails_only_on_change_and_accept_rewrites_it(tmp_path):
    baseline = tmp_path / "baseline.json"  # workers=0: comparing with the baseline is the controller's alone
    selection = "test_cell[planted_wrong-raw-eager] or test_cell[planted_ok-raw-eager]"
    proc, _, _ = run_matrix(tmp_path, selection, workers=0, extra=[f"--baseline={baseline}", "--accept"])
    assert proc.returncode == 0 and "accepted this run's outcomes as the baseline" in proc.stdout
    proc, _, _ = run_matrix(tmp_path, selection, workers=0, extra=[f"--baseline={baseline}"])
    assert proc.returncode == 0, proc.stdout[-2000:]  # the same outcomes: nothing to report

    data = json.loads(baseline.read_text())
    cells = {c["cell"]: c for c in data["cells"]}
    cells["planted_wrong-raw-eager"].update(outcome="pass", stage=None, error_type=None, message=None)
    cells["planted_ok-raw-eager"].update(outcome="fail", stage="run", error_type="RuntimeError", message="old failure")
    baseline.write_text(json.dumps(data))
    proc, _, _ = run_matrix(tmp_path, selection, workers=0, extra=[f"--baseline={baseline}"])
    assert proc.returncode == 1
    assert "REGRESSED: planted_wrong-raw-eager passed in the baseline, now WRONG" in proc.stdout
    assert "IMPROVED: planted_ok-raw-eager was fail @run" in proc.stdout
    assert f"pytest --baseline={baseline} --accept" in proc.stdout

    cells["planted_wrong-raw-eager"]["flaky"] = "planted: varies by design"
    cells["planted_ok-raw-eager"].update(outcome="pass", stage=None, error_type=None, message=None)
    cells["planted_segfault-raw-eager"] = dict(cells["planted_ok-raw-eager"], cell="planted_segfault-raw-eager", case="planted_segfault")
    data["cells"] = list(cells.values())
    baseline.write_text(json.dumps(data))
    proc, _, _ = run_matrix(tmp_path, selection, workers=0, extra=[f"--baseline={baseline}"])
    assert proc.returncode == 0, proc.stdout[-2000:]  # a flaky cell is not checked
    assert "1 baseline cells did not run: planted_segfault-raw-eager" in proc.stdout


USER_MODULES = os.path.join(ROOT, "tests", "harness", "user_modules")


def _run_cases(tmp_path, cases, selection, workers=2):
    reports = tmp_path / "reports"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", str(workers), "-q", "-p", "no:cacheprovider", *(f"--cases={c}" for c in cases),
         f"--report-dir={reports}", "--matrix-profile=ci", "-k", selection, "tests/test_matrix.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
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

    proc, results, _ = _run_cases(tmp_path / "both", ["cases", "examples/my_kernels.py"], "(add-raw-eager and not scaled_add and not tma_add) or my_leaky_relu-raw-eager")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert set(outcomes(results)) == {"add-raw-eager", "my_leaky_relu-raw-eager"}


def test_malformed_modules_and_cases_are_reported_and_the_good_cases_still_run(tmp_path):
    names = ["malformed.py", "duplicate.py", "broken_import.py", "no_cases.py", "missing.py"]
    proc, results, reports = _run_cases(tmp_path, [os.path.join(USER_MODULES, n) for n in names], "user_good and eager")
    assert proc.returncode == 1  # the run fails, so CI notices
    assert outcomes(results)["user_good-raw-eager"]["outcome"] == "pass"
    problems = {(os.path.basename(p["module"]), p["case"]): p["message"] for p in results["problems"]}
    assert problems[("malformed.py", "no_reference")].startswith("no reference: give reference=")
    assert problems[("malformed.py", "launcher_without_k")].startswith("launcher must take the kernel namespace `k` first")
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
    proc, results, _ = _run_cases(tmp_path, [os.path.join(USER_MODULES, "malformed.py")], "no_reference", workers=1)
    assert proc.returncode == 1
    assert "LEFT OUT tests/harness/user_modules/malformed.py: case 'no_reference': no reference: give reference=" in proc.stdout.replace(ROOT + "/", "")
    assert results["cells"] == [] and len(results["problems"]) == 4

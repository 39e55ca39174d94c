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
    baseline = tmp_path / "baseline.json"
    selection = "test_cell[planted_wrong-raw-eager] or test_cell[planted_ok-raw-eager]"
    proc, _, _ = run_matrix(tmp_path, selection, extra=[f"--baseline={baseline}", "--accept"])
    assert proc.returncode == 0 and "accepted this run's outcomes as the baseline" in proc.stdout
    proc, _, _ = run_matrix(tmp_path, selection, extra=[f"--baseline={baseline}"])
    assert proc.returncode == 0, proc.stdout[-2000:]  # the same outcomes: nothing to report

    data = json.loads(baseline.read_text())
    cells = {c["cell"]: c for c in data["cells"]}
    cells["planted_wrong-raw-eager"].update(outcome="pass", stage=None, error_type=None, message=None)
    cells["planted_ok-raw-eager"].update(outcome="fail", stage="run", error_type="RuntimeError", message="old failure")
    baseline.write_text(json.dumps(data))
    proc, _, _ = run_matrix(tmp_path, selection, extra=[f"--baseline={baseline}"])
    assert proc.returncode == 1
    assert "REGRESSED: planted_wrong-raw-eager passed in the baseline, now WRONG" in proc.stdout
    assert "IMPROVED: planted_ok-raw-eager was fail @run" in proc.stdout
    assert f"pytest --baseline={baseline} --accept" in proc.stdout

    cells["planted_wrong-raw-eager"]["flaky"] = "planted: varies by design"
    cells["planted_ok-raw-eager"].update(outcome="pass", stage=None, error_type=None, message=None)
    cells["planted_segfault-raw-eager"] = dict(cells["planted_ok-raw-eager"], cell="planted_segfault-raw-eager", case="planted_segfault")
    data["cells"] = list(cells.values())
    baseline.write_text(json.dumps(data))
    proc, _, _ = run_matrix(tmp_path, selection, extra=[f"--baseline={baseline}"])
    assert proc.returncode == 0, proc.stdout[-2000:]  # a flaky cell is not checked
    assert "1 baseline cells did not run: planted_segfault-raw-eager" in proc.stdout

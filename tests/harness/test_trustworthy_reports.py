"""Reports a CI job can trust: strict JSON, files others can read, no chart replaced by a run that measured
nothing, one run at a time in a report folder, and outcomes junit XML counts."""

import json
import math
import os
import sys
import xml.etree.ElementTree as ET

import pytest

from harness.model.cell import Cell
from harness.model.jsontext import loads_strict
from harness.model.outcome import CellResult, Outcome, Perf, Stage
from harness.model.results import VERSION, Results, load, save, write_atomic
from harness.plugin.report_lock import HOLDER_FILE, LOCK_FILE, ReportFolderLock
from harness.reporting import report
from tests.harness.conftest import PLANTED, run_python
from tests.harness.test_units import FINGERPRINT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The charts users read, committed: any JSON parser must read them.
COMMITTED_CHARTS = ["reports/gpu/results.json", "reports/cpu/results.json", "reports/libraries/flag_gems/results.json"]


def _wrong(cell_id, max_error, perf=None):
    return CellResult(Cell.parse(cell_id), Outcome.WRONG, stage=Stage.RUN, max_error=max_error, perf=perf)


def test_non_finite_numbers_are_written_as_their_names_in_strict_json_and_read_back_as_numbers(tmp_path):
    path = tmp_path / "results.json"
    timed = Perf(shape=[8], dtype="float32", median_ms=math.nan)
    save(Results(fingerprint=FINGERPRINT, cells=[_wrong("add-raw-eager", math.inf, timed), _wrong("add-raw-compile_default", -math.inf, timed),
                                                 _wrong("add-triton_op-eager", math.nan), _wrong("add-custom_op-eager", 0.5)]), str(path))
    text = path.read_text()
    data = loads_strict(text)  # raises on a bare NaN or Infinity, as JSON.parse does
    assert data["version"] == VERSION
    assert {c["cell"]: c["max_error"] for c in data["cells"]} == {
        "add-raw-eager": "Infinity", "add-raw-compile_default": "-Infinity", "add-triton_op-eager": "NaN", "add-custom_op-eager": 0.5}
    errors = {c.cell.id: c.max_error for c in load(str(path)).cells}
    assert errors["add-raw-eager"] == math.inf and errors["add-raw-compile_default"] == -math.inf
    assert math.isnan(errors["add-triton_op-eager"]) and errors["add-custom_op-eager"] == 0.5
    assert math.isnan(load(str(path)).by_cell()[Cell.parse("add-raw-eager")].perf.median_ms)
    # What a report shows of them is unchanged.
    assert "WRONG (max err inf)" in report.matrix(load(str(path)))


def test_an_older_results_file_with_bare_infinity_still_reads(tmp_path):
    path = tmp_path / "v3.json"
    save(Results(fingerprint=FINGERPRINT, cells=[_wrong("add-raw-eager", 1.0)]), str(path))
    data = json.loads(path.read_text())
    data["version"], data["cells"][0]["max_error"] = 3, math.inf
    path.write_text(json.dumps(data))  # Python's json writes the bare token Infinity, as version 3 files hold it
    assert "Infinity" in path.read_text() and '"Infinity"' not in path.read_text()
    assert load(str(path)).cells[0].max_error == math.inf


@pytest.mark.parametrize("chart", COMMITTED_CHARTS)
def test_the_committed_charts_are_strict_json(chart):
    with open(os.path.join(ROOT, chart)) as f:
        assert loads_strict(f.read())["version"] == VERSION


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_report_files_get_the_mode_the_process_umask_gives(tmp_path, umask):
    previous = os.umask(umask)
    try:
        write_atomic(str(tmp_path / "SUPPORT.md"), "chart")
        written = report.write(Results(fingerprint=FINGERPRINT, cells=[_wrong("add-raw-eager", 1.0)]), str(tmp_path / "reports"))
    finally:
        os.umask(previous)
    for path in [str(tmp_path / "SUPPORT.md"), *written]:
        assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask, path


def _matrix(cwd, *args, timeout=300):
    return run_python([sys.executable, "-m", "pytest", "--matrix", "-n", "0", "-p", "no:cacheprovider", "--matrix-profile=quick", *args],
                      cwd=cwd, timeout=timeout)


def _complete_chart(folder):
    report.write(Results(fingerprint=FINGERPRINT, cells=[_wrong("add-raw-eager", 1.0)]), str(folder))
    return {name: (folder / name).read_bytes() for name in ("results.json", "MATRIX.md", "SUPPORT.md")}


@pytest.mark.parametrize("selection, why", [
    (["--cases=nosuch.module"], "every case module or case given was left out"),
    ([f"--cases={PLANTED}", "-k", "no_such_cell"], "no cell was selected"),
])
def test_a_run_that_measured_no_cell_writes_no_reports_and_fails_saying_why(tmp_path, selection, why):
    reports = tmp_path / "reports"
    before = _complete_chart(reports)
    listed = sorted(p.name for p in reports.iterdir())  # the chart's files (matrix.png too, where matplotlib is installed)
    proc = _matrix(tmp_path, *selection)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert f"no cell ran, so no reports were written (reports is as it was): {why}" in proc.stdout, proc.stdout[-2000:]
    assert {name: (reports / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in reports.iterdir()) == listed  # the lock's files are gone
    assert not (reports / "partial").exists()


def test_a_second_run_into_a_report_folder_another_run_holds_refuses_naming_that_run(tmp_path):
    held = ReportFolderLock(str(tmp_path / "reports"), command="triton-compat-matrix run -n auto")
    held.acquire()
    try:
        proc = _matrix(tmp_path, f"--cases={PLANTED}", "-k", "planted_ok-raw-eager")
        assert proc.returncode == 4, proc.stdout[-2000:]
        assert (f"reports is being written by another matrix run (pid {os.getpid()} on " in proc.stderr
                and "`triton-compat-matrix run -n auto`): wait for it to end, or give this run another --report-dir" in proc.stderr), proc.stderr
        assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == sorted([LOCK_FILE, HOLDER_FILE])  # nothing written
        # Another folder is free.
        proc = _matrix(tmp_path, f"--cases={PLANTED}", "-k", "planted_ok-raw-eager", f"--report-dir={tmp_path / 'mine'}")
        assert proc.returncode == 0 and (tmp_path / "mine" / "results.json").exists(), proc.stdout[-2000:]
    finally:
        held.release()
    assert not (tmp_path / "reports").exists()  # the folder the lock made, left empty, is gone


def test_skipped_cells_are_junit_skips_and_failing_cells_fail_their_tests_only_when_asked(tmp_path):
    cells = {"planted_ok-raw-eager": "pass", "planted_wrong-raw-eager": "wrong",
             "planted_raises_at_trace-raw-compile_fullgraph": "fail", "planted_ok-raw-flop_counter": "skipped"}  # skipped on any device
    selection = ["-k", " or ".join(f"test_cell[{c}]" for c in cells), f"--cases={PLANTED}"]

    def junit(*extra):
        xml = tmp_path / f"junit{len(extra)}.xml"
        proc = _matrix(tmp_path, *selection, f"--junitxml={xml}", f"--report-dir={tmp_path / 'reports'}", *extra)
        suite = ET.parse(xml).getroot()
        suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
        by_test = {case.get("name")[len("test_cell["):-1]: case for case in suite.iter("testcase")}
        outcome = {name: {p.get("name"): p.get("value") for p in case.iter("property")}["tcm_outcome"] for name, case in by_test.items()}
        assert outcome == cells  # the outcome properties, as before
        return proc, suite, by_test

    proc, suite, by_test = junit()
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures"), suite.get("errors")) == ("4", "1", "0", "0")
    assert "the case declares no flop formula" in by_test["planted_ok-raw-flop_counter"].find("skipped").get("message")

    proc, suite, by_test = junit("--cells-must-pass")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("4", "1", "2")
    failure = by_test["planted_wrong-raw-eager"].find("failure")
    assert failure is not None and "planted_wrong-raw-eager: WRONG" in failure.get("message")
    assert by_test["planted_raises_at_trace-raw-compile_fullgraph"].find("failure") is not None
    # The reports are the same either way: the option changes what pytest counts, not what a cell measured.
    assert {c["cell"]: c["outcome"] for c in json.loads((tmp_path / "reports" / "results.json").read_text())["cells"]} == cells


def test_where_this_torchs_wrap_triton_refuses_interpreted_kernels_triton_op_cells_are_not_tested_here(monkeypatch, tmp_path):
    """torch 2.11 and older refuse to wrap_triton a kernel of Triton's CPU interpreter: a limit of the machine, so
    the triton_op style's cells are left out with the probe's answer, not charted as failures; the other styles
    and the triton_op CPU fallback (which runs the reference) still run. torch 2.11's own answer, probed, is in
    reports/torch-versions."""
    from harness.authoring import registry
    from harness.environment import probe
    from harness.execution.applicability import RunEnvironment, wrap_triton_refuses_interpreted
    from harness.execution.execute import Execution
    from harness.model.columns import Wrapping
    from harness.model.rows import Row
    from harness.model.settings import PROFILES, Settings

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(probe, "wrap_triton_takes_interpreted",
                        lambda record_dir=None: "RuntimeError: wrap_triton only works on functions annotated with triton.jit")
    case = registry.load([f"{registry.BUILTIN}.add"]).cases["add"]
    settings = Settings(profile=PROFILES["quick"], workdir=str(tmp_path))

    def execution(wrapping, row):
        return Execution(Cell("add", wrapping, Row(row)), case, settings, "cpu")

    result = execution(Wrapping.TRITON_OP, "eager").run()  # left out before any kernel runs
    assert result.outcome is Outcome.SKIPPED, (result.outcome, result.message)
    assert result.message.startswith("not tested here: this torch's wrap_triton refuses the kernels of Triton's CPU interpreter")
    assert "wrap_triton only works on functions annotated with triton.jit" in result.message
    # The other styles, and the triton_op CPU fallback (the reference as its CPU kernel), are not left out for it.
    here = RunEnvironment.here("cpu", settings.profile)
    assert wrap_triton_refuses_interpreted(Cell("add", Wrapping.TRITON_OP, Row("cpu_fallback")), case, here) is None
    assert all(wrap_triton_refuses_interpreted(Cell("add", w, Row("eager")), case, here) is None for w in Wrapping if w is not Wrapping.TRITON_OP)

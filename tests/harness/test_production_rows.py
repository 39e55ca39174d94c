"""The rows production adds, on planted cases (tests/harness/planted_production_cases.py) run on the CPU: a new size that
recompiles fails compile_no_recompile at compile, naming the guard; a program that refuses inference mode fails that row
only; what the cell saved loads and runs in a fresh process (the exported program, the cache artifacts, the precompiled
function) for the generated operator and the control, and the reproducers of a fresh-process cell and a recompile agree.
(test_invisible leaves these rows to this file without a GPU.)"""

import os
import sys

import pytest

from harness.model.outcome import Outcome
from harness.model.results import load
from tests.harness.conftest import run_python

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted_production_cases.py")
ROWS = ("compile_fullgraph", "compile_inference_mode", "compile_no_recompile", "export_load_fresh", "cache_artifacts_fresh",
        "precompile_fresh")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from tests.harness.test_trustworthy_reports import _matrix

    tmp = tmp_path_factory.mktemp("production")
    selected = (f"prod_double-control- and ({' or '.join(ROWS)})"
                " or prod_double-custom_op- and (export_load_fresh or cache_artifacts_fresh or precompile_fresh)"
                " or prod_branches-control- and (compile_no_recompile or compile_fullgraph)"
                " or prod_no_inference-control- and (compile_inference_mode or compile_fullgraph)")
    proc = _matrix(tmp, f"--cases={CASES}", "-k", selected, f"--report-dir={tmp / 'r'}")
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp, {c.cell.id: c for c in load(str(tmp / "r" / "results.json")).cells}


def test_a_plain_program_passes_every_production_row(run):
    _, cells = run
    for style, rows in (("control", ROWS), ("custom_op", ROWS[3:])):  # the operator style where it crosses to a new process
        for row in rows:
            cell = cells[f"prod_double-{style}-{row}"]
            assert cell.outcome is Outcome.PASS, (cell.cell.id, cell.outcome, cell.message)
            assert not cell.degradations, (cell.cell.id, cell.degradations)  # the cache artifacts were used


def test_a_new_size_that_recompiles_fails_at_compile_naming_the_guard(run):
    _, cells = run
    cell = cells["prod_branches-control-compile_no_recompile"]
    assert (cell.outcome, cell.stage.value) == (Outcome.FAIL, "compile"), (cell.outcome, cell.message)
    assert cell.message.startswith("Recompiling function") and "guard failed:" in cell.message and "size()[0]" in cell.message
    assert cells["prod_branches-control-compile_fullgraph"].outcome is Outcome.PASS  # a recompile is allowed there


def test_a_program_that_refuses_inference_mode_fails_that_row_only(run):
    _, cells = run
    cell = cells["prod_no_inference-control-compile_inference_mode"]
    assert cell.outcome is Outcome.FAIL and "refuses to run without autograd" in cell.message, (cell.outcome, cell.message)
    assert cells["prod_no_inference-control-compile_fullgraph"].outcome is Outcome.PASS


def test_the_fresh_process_rows_reproduce_alone(run):
    """The reproducer of a fresh-process row starts itself again as the process that loads what it saved."""
    tmp, _ = run
    selected = r"prod_double-custom_op-precompile_fresh|prod_branches-control-compile_no_recompile"  # a regex
    proc = run_python([sys.executable, "-m", "harness", "repro", "--check", str(tmp / "r" / "results.json"), "--passing", "all",
                       "--cases", CASES, "-k", selected, "--out", str(tmp / "repro")], cwd=tmp, timeout=600)
    report = open(tmp / "repro" / "REPRO.md").read()
    assert "2 reproduced" in report and "differs" not in report, report[-3000:]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

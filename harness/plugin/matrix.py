"""The matrix: one test per (case, wrapping style, compile path).

The plugin (harness.plugin) adds this module to a run that asks for the matrix (`pytest --matrix`, or
`triton-compat-matrix run`); it is shipped inside the package so that the matrix runs from any folder.
A cell's outcome is data for the reports, not a verdict: by default the test fails only when the case or the
harness itself broke (or, with --baseline, when the outcome changed), and `-v`, junit XML and `--lf` show the
outcome (see harness.plugin). A cell that was not tested here is a skip. With --cells-must-pass, a cell that
did not pass (WRONG, FAIL, CRASH, TIMEOUT) fails its test, for a gate that requires every cell to pass.
"""

import pytest

from harness.model.cell import matrix_cells
from harness.model.judging import outcome_label
from harness.model.outcome import Fault, Outcome
from harness.plugin.worker import MatrixWorker


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    worker = MatrixWorker.of(metafunc.config)
    if worker is None:
        raise pytest.UsageError(f"{__file__} is the matrix's test module: run it with `pytest --matrix` or `triton-compat-matrix run`")
    cells = matrix_cells(worker.cases)
    metafunc.parametrize("cell", cells, ids=[c.id for c in cells])


def test_cell(cell, request):
    worker = MatrixWorker.of(request.config)
    result = worker.run(cell, request.node)
    if result.outcome is Outcome.ERROR:
        who = "the case's own code raised" if result.fault is Fault.CASE else "the harness broke"
        pytest.fail(f"{cell.id}: {who} at {result.stage.value if result.stage else '?'}: {result.error_type}: {result.message}")
    changed = worker.baseline_change(result)  # only with --baseline: the run must reproduce it
    if changed:
        pytest.fail(changed)
    if result.outcome is Outcome.SKIPPED:  # junit XML and pytest's summary count it as a skip, with its reason
        pytest.skip(result.message or "not tested here")
    if result.outcome is not Outcome.PASS and request.config.getoption("cells_must_pass"):
        pytest.fail(f"{cell.id}: {outcome_label(result)}: {result.error_type or ''}{': ' if result.error_type else ''}{result.message or ''}", pytrace=False)

"""The matrix: one test per (case, wrapping style, compile path).

The plugin (harness.plugin) adds this module to a run that asks for the matrix (`pytest --matrix`, or
`triton-compat-matrix run`); it is shipped inside the package so that the matrix runs from any folder.
A cell's outcome is data for the reports, not a verdict: the test fails only when the case or the harness
itself broke, and `-v`, junit XML and `--lf` show the outcome (see harness.plugin).
"""

import pytest

from harness.model.cell import matrix_cells
from harness.model.outcome import Outcome
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
        who = "the case's own code raised" if result.fault == "case" else "the harness broke"
        pytest.fail(f"{cell.id}: {who} at {result.stage.value if result.stage else '?'}: {result.error_type}: {result.message}")
    changed = worker.baseline_change(result)  # only with --baseline: the run must reproduce it
    if changed:
        pytest.fail(changed)

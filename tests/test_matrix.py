"""The matrix: one test per (case, wrapping style, compile path).

A cell's outcome is data for the reports, not a verdict: the test fails only when the case or the
harness itself broke.
"""

import pytest

from harness.outcome import Outcome


def test_cell(cell, run_cell, check_baseline):
    result = run_cell(cell)
    if result.outcome is Outcome.ERROR:
        who = "the case's own code raised" if result.fault == "case" else "the harness broke"
        pytest.fail(f"{cell.id}: {who} at {result.stage.value if result.stage else '?'}: {result.error_type}: {result.message}")
    changed = check_baseline(result)  # only with --baseline: the run must reproduce it
    if changed:
        pytest.fail(changed)

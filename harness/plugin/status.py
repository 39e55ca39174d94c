"""What a cell's test report carries and shows. Its result as properties (junit XML writes them), its outcome
as a status letter and word (`-v`), and which cells pytest's --lf counts as failed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.model.outcome import CellResult
from harness.plugin.options import CONTROLLER

# The test report's properties: the whole result as JSON, and its outcome, stage and message on their own for
# tools that read one field.
RESULT_PROPERTY, OUTCOME_PROPERTY, STAGE_PROPERTY, MESSAGE_PROPERTY = "tcm_result", "tcm_outcome", "tcm_stage", "tcm_message"


def attach(item: pytest.Item, result: CellResult) -> None:
    """Put a cell's result on its test's report, for the controller and for junit XML."""
    item.user_properties += [(OUTCOME_PROPERTY, result.outcome.value), (STAGE_PROPERTY, result.stage.value if result.stage else ""),
                             (MESSAGE_PROPERTY, result.message or ""), (RESULT_PROPERTY, json.dumps(result.to_json()))]


def result_of(report: pytest.TestReport) -> CellResult | None:
    """The cell's result its worker attached to the test report, if the cell ran."""
    value = dict(report.user_properties).get(RESULT_PROPERTY)
    return CellResult.from_json(json.loads(value)) if value else None


# What `-v` and the progress letters show for a cell that did not pass: (category, letter, word, colour).
# The categories are counted in pytest's last line ("3 wrong, 2 crash"); the test itself passed.
_STATUS = {
    "skipped": ("skip", "s", "SKIP", "blue"),
    "wrong": ("wrong", "w", "WRONG", "red"),
    "fail": ("fail", "f", "FAIL", "red"),
    "crash": ("crash", "c", "CRASH", "red"),
    "timeout": ("timeout", "t", "TIMEOUT", "red"),
    "env": ("env", "v", "ENV", "yellow"),
}


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    if report.when != "call" or not report.passed:
        return None
    outcome = dict(report.user_properties).get(OUTCOME_PROPERTY)
    controller = config.pluginmanager.get_plugin(CONTROLLER)
    if outcome is None or controller is None:
        return None
    if controller.blamed_on_environment(report):
        outcome = "env"
    if outcome not in _STATUS:
        return None
    category, letter, word, colour = _STATUS[outcome]
    return category, letter, (word, {colour: True})

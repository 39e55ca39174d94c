"""docs/bug-replay.md's table of upstream issues replayed against the chart: its cells are cells of the plan, it
lists issues beyond the known-issue table, and the committed table is what docs/bug_replay.py makes of the chart."""

import importlib.util
import os
import re
import sys

from harness.model.known_issues import ENTRIES
from tests.harness.conftest import run_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIN_ISSUES = 30


def _bug_replay():
    """docs/bug_replay.py, loaded by its path: docs/ is no package."""
    spec = importlib.util.spec_from_file_location("bug_replay", os.path.join(ROOT, "docs", "bug_replay.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plan_cells(tmp_path) -> set[str]:
    """The built-in plan's cell ids, as a collect-only run lists them (run where no conftest or report interferes)."""
    done = run_python([sys.executable, "-m", "harness", "run", "--collect-only", "-q"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return set(re.findall(r"::test_cell\[([^\]]+)\]", done.stdout))


def test_every_cell_the_table_names_is_a_cell_of_the_built_in_plan(tmp_path):
    plan = _plan_cells(tmp_path)
    assert plan, "the collect-only run listed no cells"
    named = {cell for issue in _bug_replay().ISSUES for cell in issue.cells}
    assert sorted(named - plan) == [], "docs/bug_replay.py names cells the built-in plan lacks"


def test_at_least_thirty_issues_are_listed_once_each_and_none_is_already_a_known_issue():
    keys = [issue.key for issue in _bug_replay().ISSUES]
    assert len(keys) >= MIN_ISSUES
    assert len(set(keys)) == len(keys), "an issue is listed twice"
    assert sorted(set(keys) & {entry.key for entry in ENTRIES}) == [], "harness/model/known_issues.py has these"


def test_an_issue_without_cells_says_what_is_missing_and_every_symptom_compiles():
    for issue in _bug_replay().ISSUES:
        assert issue.cells or issue.gap, f"{issue.key}: no cells and no gap"
        assert re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", issue.key), issue.key
        re.compile(issue.symptom)


def test_the_committed_table_is_what_render_gives_for_the_committed_gpu_chart():
    replay = _bug_replay()
    with open(replay.DOC) as f:
        committed = replay.committed_block(f.read())
    assert committed == replay.render(os.path.join(ROOT, replay.DEFAULT_RESULTS)), (
        "docs/bug-replay.md's table is stale: run `python docs/bug_replay.py`")

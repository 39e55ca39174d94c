"""`python -m harness diff` on results files made by real runs, edited to regress, fix and drop cells."""

import json
import os

import pytest

from harness.__main__ import main as cli

REAL_RUN = os.path.join(os.path.dirname(__file__), "..", "..", "reports", "cpu", "results.json")


@pytest.fixture
def real_run():
    with open(REAL_RUN) as f:
        return json.load(f)


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def cell(data, cell_id):
    return next(c for c in data["cells"] if c["cell"] == cell_id)


def test_identical_runs_have_no_differences(tmp_path, real_run, capsys):
    old = write(tmp_path, "old.json", real_run)
    assert cli(["diff", old, old]) == 0
    assert f"0 regressed, 0 fixed, 0 failing differently, 0 new, 0 missing**, {len(real_run['cells'])} unchanged" in capsys.readouterr().out


def test_a_run_that_carried_cells_over_says_how_many_and_from_which_run(tmp_path, real_run, capsys):
    old = write(tmp_path, "old.json", real_run)
    for cell_id in ("add-raw-eager", "sin-raw-eager"):
        cell(real_run, cell_id)["carried_from"] = "the run of 2026-11-28T00:51:53+00:00 at commit f9a8a91 (results.json)"
    new = write(tmp_path, "new.json", real_run)
    assert cli(["diff", old, new]) == 0
    assert (f"{new}: 2 cells carried over from the run of 2026-11-28T00:51:53+00:00 at commit f9a8a91 (results.json), not run "
            "again (--baseline).") in capsys.readouterr().out


def test_regressed_fixed_changed_new_and_missing_cells_are_grouped(tmp_path, real_run, capsys):
    old_run = json.loads(json.dumps(real_run))
    old_run["cells"] = [c for c in old_run["cells"] if c["cell"] != "sin-control-opcheck"]  # new in the new run
    old = write(tmp_path, "old.json", old_run)
    new_run = json.loads(json.dumps(real_run))
    regress = cell(new_run, "sin-custom_op-eager")
    assert regress["outcome"] == "pass"
    regress.update(outcome="fail", stage="run", error_type="RuntimeError", message="planted regression")
    fix = cell(new_run, "sin-raw-compile_fullgraph")
    assert fix["outcome"] == "fail"
    fix.update(outcome="pass", stage=None, error_type=None, message=None)
    change = cell(new_run, "sin-raw-export_nonstrict")
    change.update(error_type="ValueError", message="a different error now")
    dropped = cell(new_run, "silu-control-eager")
    new_run["cells"].remove(dropped)
    new = write(tmp_path, "new.json", new_run)

    out_file = tmp_path / "diff.md"
    assert cli(["diff", old, new, "--out", str(out_file)]) == 1  # a regression fails the check
    text = out_file.read_text()
    assert "**1 regressed, 1 fixed, 1 failing differently, 1 new, 1 missing**" in text
    assert "`sin-control-opcheck`" in text.split("## New cells")[1]
    assert "| `sin-custom_op-eager` | pass" in text and "planted regression" in text
    assert "`sin-raw-compile_fullgraph`" in text.split("## Fixed")[1]
    assert "a different error now" in text.split("## Failing differently")[1]
    assert "`silu-control-eager`" in text.split("## Missing cells")[1]

    assert cli(["diff", new, old]) == 1  # the other way round, the fix is the regression
    assert "1 new" in capsys.readouterr().out


def test_runs_of_different_devices_are_compared_with_a_loud_warning(tmp_path, real_run, capsys):
    other = json.loads(json.dumps(real_run))
    other["fingerprint"]["mode"] = "gpu"
    assert cli(["diff", write(tmp_path, "cpu.json", real_run), write(tmp_path, "gpu.json", other)]) == 0
    captured = capsys.readouterr()
    assert "WARNING: these runs measured different devices" in captured.out
    assert "comparing a cpu-interpreter run with a gpu run" in captured.err


@pytest.mark.parametrize(
    "content, problem",
    [
        ('{"schema": "triton-compat-matrix/results", "version": 1, "cells": [', "not JSON (truncated or corrupt?)"),
        ('{"schema": "something-else"}', "not a triton-compat-matrix results file"),
        ('{"schema": "triton-compat-matrix/results", "version": 0}', "results schema version 0"),
        (None, "unknown cell id"),
        ('{"schema": "triton-compat-matrix/results", "version": 1, "cells": []}', "malformed results: KeyError"),
    ],
)
def test_bad_input_exits_2_and_names_the_file_and_the_problem(tmp_path, real_run, capsys, content, problem):
    if content is None:
        broken = json.loads(json.dumps(real_run))
        broken["cells"][0]["cell"] = "sin-raw-export_sideways"
        content = json.dumps(broken)
    bad = write(tmp_path, "bad.json", content)
    assert cli(["diff", write(tmp_path, "good.json", real_run), bad]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and problem in err


@pytest.mark.parametrize("old", ["3.6.0", "3.8.0"])
def test_the_committed_upgrade_diffs_are_what_the_committed_runs_give(tmp_path, old):
    """reports/triton-upgrade: each diff is regenerated from the two results files it names."""
    upgrade = os.path.join(os.path.dirname(REAL_RUN), "..", "triton-upgrade")
    out = tmp_path / "diff.md"
    old_path = f"reports/triton-upgrade/triton-{old}/results.json"
    new_path = "reports/triton-upgrade/triton-3.9.0/results.json"
    cwd = os.getcwd()
    os.chdir(os.path.join(upgrade, "..", ".."))  # the diff names the files as the committed command did
    try:
        assert cli(["diff", old_path, new_path, "--out", str(out)]) == 0
    finally:
        os.chdir(cwd)
    with open(os.path.join(upgrade, f"diff-{old}-to-3.9.0.md")) as f:
        assert out.read_text() == f.read()


def test_repeated_runs_that_agree_report_no_differences(tmp_path, real_run, capsys):
    runs = [write(tmp_path, f"run-{n}.json", real_run) for n in (1, 2, 3)]
    assert cli(["repeat", "--results", *runs, "--out", str(tmp_path / "repeat")]) == 0
    text = (tmp_path / "repeat" / "REPEAT.md").read_text()
    assert f"**0 cells differ across the 3 runs**, {len(real_run['cells'])} are the same in every run" in text
    assert "(flaky)" not in (tmp_path / "repeat" / "MATRIX.md").read_text()


def test_a_cell_that_differs_between_runs_is_labelled_flaky_with_each_runs_outcome(tmp_path, real_run, capsys):
    second = json.loads(json.dumps(real_run))
    cell(second, "add-custom_op-eager").update(outcome="fail", stage="run", error_type="RuntimeError", message="planted: a race")
    cell(second, "sin-raw-eager").update(message="another first line")  # same outcome: reworded, not a difference
    second["cells"] = [c for c in second["cells"] if c["cell"] != "add-control-eager"]
    runs = [write(tmp_path, "run-1.json", real_run), write(tmp_path, "run-2.json", second)]
    assert cli(["repeat", "--results", *runs, "--out", str(tmp_path / "repeat")]) == 1
    text = " ".join((tmp_path / "repeat" / "REPEAT.md").read_text().split())  # tables' padding aside
    assert "**2 cells differ across the 2 runs**" in text
    assert "| `add-custom_op-eager` | pass | fail @run: planted: a race |" in text
    assert "| `add-control-eager` | pass | did not run |" in text
    assert "`sin-raw-eager`" in text.split("Same outcome, another first line")[1]
    combined = json.loads((tmp_path / "repeat" / "results.json").read_text())
    assert cell(combined, "add-custom_op-eager")["flaky"] == "differs across runs: run 1 pass; run 2 fail @run: planted: a race"
    matrix = (tmp_path / "repeat" / "MATRIX.md").read_text()
    assert "pass (flaky)" in matrix and "FLAKY, differs across runs: run 1 pass; run 2 fail @run" in matrix
    # The combined file is a baseline whose flaky cells are not checked.
    assert cli(["diff", runs[0], str(tmp_path / "repeat" / "results.json")]) == 0

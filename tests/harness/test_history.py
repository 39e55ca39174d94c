"""`python -m harness history` on planted runs of three environments, and on the committed real runs."""

import os
import shlex
import subprocess
import sys

import pytest

from harness.__main__ import main as cli
from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.fingerprint import Fingerprint
from harness.model.outcome import CellResult, Outcome, Stage
from harness.model.results import Results, save
from harness.model.rows import Row

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def fingerprint(torch, triton, profile="matrix", commit="0123456789abcdef"):
    return Fingerprint.from_json({"mode": "gpu", "torch": torch, "triton": triton, "cuda": "13.0", "gpu": {"available": True, "name": "NVIDIA H200"},
                                  "compiler": {"CXX": "g++"}, "hypothesis": {"profile": profile, "max_examples": 20}, "git": {"commit": commit}})


OLDEST, MIDDLE, NEWEST = fingerprint("2.10.0", "3.5.0"), fingerprint("2.11.0", "3.6.0", "quick"), fingerprint("2.12.0", "3.7.0")
CASES, ROWS = ("add", "sin"), (Row.EAGER, Row.COMPILE_FULLGRAPH)

BREAKS = "add-triton_op-compile_fullgraph"  # passes, fails in the middle environment, passes again in the newest
SKIPPED = "sin-raw-compile_fullgraph"  # passes, skipped by the middle environment's profile, passes again
FAILS_DIFFERENTLY = "sin-raw_autograd-compile_fullgraph"  # fails everywhere, at another stage in the newest
ALWAYS_FAILS = "add-raw-compile_fullgraph"


def planted(where, changes):
    """A run of every case, style and row that passes but for the cells changed."""
    cells = []
    for case in CASES:
        for style in Wrapping:
            for row in ROWS:
                cell = Cell(case, style, row)
                if style is Wrapping.SHIPPED:
                    continue  # these cases name no library op of their own
                cells.append(CellResult(cell, **{"outcome": Outcome.PASS, **changes.get(cell.id, {})}))
    return Results(fingerprint=where, cells=cells)


def fails(stage, error_type, message):
    return dict(outcome=Outcome.FAIL, stage=stage, error_type=error_type, message=message)


ALWAYS = {ALWAYS_FAILS: fails(Stage.COMPILE, "Unsupported", "planted: a raw launch does not trace"),
          FAILS_DIFFERENTLY: fails(Stage.COMPILE, "Unsupported", "planted: no autograd.Function here")}
MIDDLE_CHANGES = {
    BREAKS: fails(Stage.COMPILE, "InductorError", "planted: triton_op broke in 2.11"),
    SKIPPED: dict(outcome=Outcome.SKIPPED, message="this run's profile checks this row only on cases tagged 'tutorial'"),
}
NEWEST_CHANGES = {FAILS_DIFFERENTLY: fails(Stage.RUN, "RuntimeError", "planted: it compiles now, and fails when run")}


@pytest.fixture
def runs(tmp_path):
    """Results files of the three environments, oldest first; the newest split in two files by row, as `-k` splits a run."""
    paths = {}
    for name, where, changes in (("oldest", OLDEST, ALWAYS), ("middle", MIDDLE, {**ALWAYS, **MIDDLE_CHANGES}),
                                 ("newest", NEWEST, {**ALWAYS, **NEWEST_CHANGES})):
        run = planted(where, changes)
        if name == "newest":
            for part, row in (("eager", Row.EAGER), ("compile", Row.COMPILE_FULLGRAPH)):
                paths[f"newest-{part}"] = str(tmp_path / f"newest-{part}.json")
                save(Results(fingerprint=where, cells=[c for c in run.cells if c.row is row]), paths[f"newest-{part}"])
        else:
            paths[name] = str(tmp_path / f"{name}.json")
            save(run, paths[name])
    return paths


def flat(text):
    return " ".join(text.split())  # tables' padding aside


def chart_entries(text):
    """The chart as {row title: [entry of each column]}; an entry is its styles' verdicts."""
    chart = text.split("\n\n")[2]
    header, _, *rows = chart.splitlines()
    headings = [cell.strip() for cell in header.strip("|").split("|")][1:]
    entries = {}
    for line in rows:
        title, *cells = [cell.strip() for cell in line.strip("|").split("|")]
        entries[title] = [cell.split("<br>") for cell in cells]
    return headings, entries


def section(text, step):
    """One step's part of the changes."""
    return text.split(f"### {step}")[1].split("\n### ")[0]


def test_each_environment_is_a_column_and_split_files_of_one_environment_share_theirs(runs, tmp_path):
    out = tmp_path / "HISTORY.md"
    files = [runs["oldest"], runs["middle"], runs["newest-eager"], runs["newest-compile"]]
    assert cli(["history", *files, "--out", str(out)]) == 1
    headings, entries = chart_entries(out.read_text())
    assert headings == ["(1) torch 2.10.0, Triton 3.5.0, NVIDIA H200, commit 0123456789ab",
                        "(2) torch 2.11.0, Triton 3.6.0, NVIDIA H200, quick profile, commit 0123456789ab",
                        "(3) torch 2.12.0, Triton 3.7.0, NVIDIA H200, commit 0123456789ab"]
    assert list(entries) == [Row.EAGER.spec.title, Row.COMPILE_FULLGRAPH.spec.title]
    compiled = entries[Row.COMPILE_FULLGRAPH.spec.title]
    assert compiled[0] == ["raw ◐ 1/2", "raw_autograd ◐ 1/2", "triton_op ✓ 2/2", "custom_op ✓ 2/2", "control ✓ 2/2"]
    # The skipped cell is not counted; the cell that broke is.
    assert compiled[1] == ["raw ✗ 0/1", "raw_autograd ◐ 1/2", "triton_op ◐ 1/2", "custom_op ✓ 2/2", "control ✓ 2/2"]
    assert compiled[2] == compiled[0]
    assert entries[Row.EAGER.spec.title] == [[f"{style.value} ✓ 2/2" for style in Wrapping if style is not Wrapping.SHIPPED]] * 3
    legend = flat(out.read_text().split("## Environments")[1].split("## Changes")[0])
    assert f"| results files | `{runs['oldest']}` | `{runs['middle']}` | `{runs['newest-eager']}`, `{runs['newest-compile']}` |" in legend


def test_a_cell_that_breaks_in_the_middle_and_is_fixed_in_the_newest_is_listed_in_both_steps(runs, capsys):
    files = [runs["oldest"], runs["middle"], runs["newest-eager"], runs["newest-compile"]]
    assert cli(["history", *files]) == 1
    captured = capsys.readouterr()
    first, second = flat(section(captured.out, "(1) -> (2)")), flat(section(captured.out, "(2) -> (3)"))
    assert "**1 broke in (2)**, 0 fixed in (2), 0 fail differently, 18 unchanged; 1 not compared" in first
    assert f"| `{BREAKS}` | pass | fail @compile: planted: triton_op broke in 2.11 |" in first.split("Broke in (2): 1 cell")[1]
    assert "**0 broke in (3)**, 1 fixed in (3), 1 fail differently, 17 unchanged; 1 not compared" in second
    assert f"| `{BREAKS}` | fail @compile: planted: triton_op broke in 2.11 | pass |" in second.split("Fixed in (3): 1 cell")[1]
    assert (f"| `{FAILS_DIFFERENTLY}` | fail @compile: planted: no autograd.Function here | fail @run: planted: it compiles "
            "now, and fails when run |") in second.split("Fail differently: 1 cell")[1]
    # The summary line names the step in which a cell broke, and only that one.
    assert captured.err.strip() == ("history: cells broke in (2) torch 2.11.0, Triton 3.6.0, NVIDIA H200, quick profile, "
                                    "commit 0123456789ab (after (1)): 1")


def test_a_cell_skipped_in_one_environment_is_not_compared_rather_than_broken_or_fixed(runs, capsys):
    files = [runs["oldest"], runs["middle"], runs["newest-eager"], runs["newest-compile"]]
    cli(["history", *files])
    out = capsys.readouterr().out
    for step in ("(1) -> (2)", "(2) -> (3)"):
        changes = section(out, step)
        assert f"`{SKIPPED}`" not in changes
        assert "not compared (0 only in" in changes and "1 skipped in one or both)" in changes


def test_no_cell_broke_exits_0(runs, capsys):
    assert cli(["history", runs["middle"], runs["newest-compile"], runs["newest-eager"]]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert f"`{BREAKS}`" in captured.out.split("Fixed in (2): 1 cell")[1]


def test_a_file_of_an_environment_given_earlier_joins_that_column(runs, capsys):
    assert cli(["history", runs["newest-eager"], runs["middle"], runs["newest-compile"]]) == 1
    headings, entries = chart_entries(capsys.readouterr().out)
    assert [h.split(",")[0] for h in headings] == ["(1) torch 2.12.0", "(2) torch 2.11.0"]
    assert entries[Row.COMPILE_FULLGRAPH.spec.title][0][2] == "triton_op ✓ 2/2"  # the later file's cells are in column 1


def test_runs_of_one_environment_under_two_profiles_are_two_columns(tmp_path, capsys):
    """Another profile checks other rows and draws another number of examples: a measurement of its own, not a
    part of the same run (the two runs hold the same cells, which a merge refuses)."""
    paths = []
    for profile in ("matrix", "quick"):
        paths.append(str(tmp_path / f"{profile}.json"))
        save(planted(fingerprint("2.12.0", "3.7.0", profile), ALWAYS), paths[-1])
    assert cli(["history", *paths]) == 0
    headings, _ = chart_entries(capsys.readouterr().out)
    assert headings[1] == "(2) torch 2.12.0, Triton 3.7.0, NVIDIA H200, quick profile, commit 0123456789ab"


@pytest.mark.parametrize(
    "files, problem",
    [
        (["oldest", "absent"], "absent.json: cannot read"),
        (["oldest", "not-results"], "not-results.json: not a triton-compat-matrix results file"),
        (["newest-eager", "newest-compile"], "all measured one environment (torch 2.12.0, Triton 3.7.0, NVIDIA H200, commit "
                                             "0123456789ab); history charts at least two: add a results file of another environment"),
        (["oldest"], "oldest.json: measured one environment"),
        (["oldest", "middle", "oldest"], "oldest.json: cells already in an earlier file: add-control-compile_fullgraph, "),
    ],
)
def test_bad_input_exits_2_and_says_what_to_fix(runs, tmp_path, capsys, files, problem):
    (tmp_path / "not-results.json").write_text('{"schema": "something-else"}')
    paths = [runs.get(name, str(tmp_path / f"{name}.json")) for name in files]
    assert cli(["history", *paths]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and problem in err


def test_the_committed_history_is_what_its_command_gives_without_torch(tmp_path):
    """reports/history/HISTORY.md is regenerated by the command in its README, in a process where torch cannot be
    imported: history reads results files only. Its exit status is the one the command gives in this process."""
    with open(os.path.join(ROOT, "reports", "history", "README.md")) as f:
        (command,) = [line for line in f if line.startswith("python -m harness history ")]
    args = shlex.split(command)[3:]

    def writing_to(name):
        changed = list(args)
        changed[changed.index("--out") + 1] = str(tmp_path / name)
        return changed

    blocked = "import sys, runpy; [sys.modules.__setitem__(m, None) for m in ('torch', 'triton', 'hypothesis', 'numpy')]; "
    code = blocked + f"sys.argv = ['harness', *{writing_to('HISTORY.md')!r}]; runpy.run_module('harness', run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    cwd = os.getcwd()
    os.chdir(ROOT)  # the chart names the files as the command gave them
    try:
        status = cli(writing_to("in-process.md"))
    finally:
        os.chdir(cwd)
    assert done.returncode == status, done.stderr
    with open(os.path.join(ROOT, "reports", "history", "HISTORY.md")) as f:
        assert (tmp_path / "HISTORY.md").read_text() == f.read()

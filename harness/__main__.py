"""The command line: run, report, diff, history, bench, repeat, repro, profile, cases.

`python -m harness report RESULTS.json [MORE.json ...] --out DIR` rewrites SUPPORT.md, MATRIX.md and
results.json from results files, merging runs that were split (by `-k`, or across machines) as long as
they measured the same environment; with `--rerun`, each later file re-ran cells of the earlier ones and
its results replace theirs (the chart names the re-runs).

`python -m harness diff OLD.json NEW.json [--out FILE]` compares two runs: exit 0 with no regressions,
1 with regressions, 2 for bad input, 4 when either run is incomplete (killed or interrupted: its missing cells are not
compared, so an upgrade gate must not pass on it).

Every command's exit statuses are in one table in docs/commands.md ("Exit statuses"); an error is one line on stderr,
never a traceback.

`python -m harness history A.json B.json [C.json ...] [--out FILE]` charts runs of several environments, oldest
first, one column each (files of one environment share it), and the cells that broke, were fixed or fail
differently between neighbours: exit 0 when none broke, 1 when some did, 2 for bad input.

`python -m harness repeat [--runs N] [--concurrent] [--out DIR] [PYTEST ARGS ...]` runs the matrix N times
and compares the runs (`--results A.json B.json ...` compares runs already made): exit 0 when every cell
is the same in every run, 1 when some differ (labelled flaky in the combined report), 2 for bad input.

`python -m harness bench [--out FILE] [--report-dir DIR] [PYTEST ARGS ...]` runs the matrix with
`pytest --matrix -n auto` and prints how fast it ran, what the harness itself cost and how near its estimate of the time
left came; `bench --results RESULTS.json` prints the same of a run already made.

`python -m harness repro CELL [--results FILE] [--out FILE] [--cases SPEC]` writes a Python file that reproduces one
cell alone (torch, triton and the case's module only); `python -m harness repro --check RESULTS.json --out DIR
[--passing N|all]` writes and runs the reproducer of every failing cell of a run and of a sample of its passing cells,
each in a fresh process, and compares each with what the run recorded (exit 1 where one does not agree with its cell).

`python -m harness profile DIR [--out FILE]` sums the stack samples a `pytest --matrix --profile-dir DIR` run left:
each row's time by the part of PyTorch, Triton or the harness it went to, and the functions that took most.

`python -m harness run [PYTEST ARGS ...]` (installed: `triton-compat-matrix run`) runs the matrix: it is
`pytest --matrix`, from any folder.

bench, repeat and run pass every argument they do not know to pytest, in order (`-k aoti`, `-n 4`,
`--cases my.py`); a `--` before them is allowed.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Any

from harness.model import results as results_file
from harness.model.errors import OutputNotWritten, ResultsError, UsageError
from harness.model.results import merge
from harness.reporting import diff, history, report

# The commands that run pytest, and take the arguments they do not know as pytest's.
_RUN_PYTEST = ("run", "bench", "repeat")
# Exit statuses of the commands that read results files (docs/exit-codes.md; `run` has pytest's).
OK, REGRESSED, UNUSABLE, NOT_WRITTEN, INCOMPLETE = 0, 1, 2, 3, 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", add_help=False, help="run the matrix: pytest --matrix with the arguments given (-h: pytest's help)")
    rep = commands.add_parser("report", help="write the reports from one or more results files (merged)")
    rep.add_argument("results", nargs="+", help="results.json files")
    rep.add_argument("--out", required=True, help="directory for SUPPORT.md, MATRIX.md, results.json")
    rep.add_argument("--rerun", action="store_true",
                     help="each later file re-ran some cells of the files before it: its results replace theirs")
    dif = commands.add_parser("diff", help="compare two results files: regressed, fixed, changed, new, missing")
    dif.add_argument("old")
    dif.add_argument("new")
    dif.add_argument("--out", help="write the markdown here instead of standard output")
    his = commands.add_parser("history", help="one chart across several environments, oldest first, and what changed between neighbours")
    his.add_argument("results", nargs="+", help="results.json files, the oldest environment first")
    his.add_argument("--out", help="write the markdown here instead of standard output")
    ben = commands.add_parser("bench", help="run the matrix (pytest -n auto) and print its speed figures", allow_abbrev=False)
    ben.add_argument("--out", help="also write the figures here")
    ben.add_argument("--report-dir", help="where the run's reports go (default: a temporary directory)")
    ben.add_argument("--results", metavar="RESULTS_JSON", help="print the figures of this run, already made, instead of running the matrix")
    rep_ = commands.add_parser("repeat", help="run the matrix N times and compare the runs cell by cell", allow_abbrev=False)
    rep_.add_argument("--runs", type=int, default=3, help="how many runs (default 3)")
    rep_.add_argument("--out", default="reports/repeat", help="where run-1..N, REPEAT.md and the combined reports go")
    rep_.add_argument("--concurrent", action="store_true", help="run them at once, each on a GPU of its own, the cores split between them")
    rep_.add_argument("--results", nargs="+", metavar="RESULTS_JSON", help="compare these runs instead of running the matrix")
    rpr = commands.add_parser("repro", help="write a standalone script that reproduces one cell (or, with --check, run every failing cell's)")
    rpr.add_argument("cell", nargs="?", help="the cell's id, e.g. add-raw-export_nonstrict")
    rpr.add_argument("--results", help="the results file that recorded the cell (its smallest failing example and error); "
                                       "default: reports/results.json where it exists")
    rpr.add_argument("--out", help="write the script here (default: standard output); with --check, the folder for the scripts")
    rpr.add_argument("--cases", action="append", help="case modules or files, as for pytest --cases (default: the run's own --cases, as "
                                                      "its results file records them; else the built-ins)")
    rpr.add_argument("--device", help="the device the script runs on (default: the recorded run's: cuda, or cpu on the interpreter)")
    rpr.add_argument("--check", metavar="RESULTS_JSON", help="write and run the reproducer of every failing cell of this run, and of "
                                                             "a sample of its passing cells (--passing)")
    rpr.add_argument("--passing", type=_count_or_all, default=50, metavar="N|all",
                     help="with --check: how many passing cells to check too, spread over the rows (default 50; all: every one)")
    rpr.add_argument("-k", dest="match", help="with --check: only the cells whose id this regular expression finds")
    rpr.add_argument("-n", dest="jobs", type=int, default=1, help="with --check: reproducers run at once (default 1)")
    rpr.add_argument("--timeout", type=float, default=600.0, help="with --check: seconds a reproducer may run (default 600)")
    pro = commands.add_parser("profile", help="where the cells of a --profile-dir run spent their time, by row and part of the stack")
    pro.add_argument("dir", help="the folder given to --profile-dir")
    pro.add_argument("--out", help="also write the tables here")
    cas = commands.add_parser("cases", help="print the cases as a table: what each tests, the inputs it draws")
    cas.add_argument("--cases", action="append", help="case modules or files, as for pytest --cases (default: the built-ins)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.command not in _RUN_PYTEST and pytest_args:
        parser.error(f"unrecognized arguments: {' '.join(pytest_args)}")
    if pytest_args[:1] == ["--"]:
        pytest_args = pytest_args[1:]
    if sys.stdout is None:  # started with standard output closed: what the command says would go nowhere
        print("error: standard output is closed: nothing was done; give the command somewhere to print", file=sys.stderr)
        return NOT_WRITTEN
    try:
        _refuse_outputs_not_ours(args)
        status = _command(args, pytest_args, parser)
        sys.stdout.flush()  # what it printed, written now: a full or closed standard output is this command's to answer
        return status
    except (UsageError, ResultsError) as exc:  # the harness's own errors, mapped to statuses here and nowhere else
        print(f"error: {exc}", file=sys.stderr)
        return UNUSABLE
    except OutputNotWritten as exc:
        print(f"error: {exc}", file=sys.stderr)
        return NOT_WRITTEN
    except OSError as exc:
        if not _stdout_failed(exc):
            raise
        print(f"error: standard output could not be written ({exc.strerror or exc}): nothing more was printed", file=sys.stderr)
        return NOT_WRITTEN


def _stdout_failed(exc: OSError) -> bool:
    """Whether `exc` is standard output's failure (full: ENOSPC; closed: EPIPE), in which case the rest of what it holds
    is dropped, so that the interpreter's own flush at exit does not fail again with a traceback."""
    if not isinstance(exc, BrokenPipeError) and exc.errno not in (errno.ENOSPC, errno.EPIPE, errno.EIO):
        return False
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return True


def _refuse_outputs_not_ours(args: argparse.Namespace) -> None:
    """OutputNotWritten before any work where an output named on the command line is something other than a regular
    file (or a folder, for the commands that write a folder) or nothing: /dev/full, a pipe, a link."""
    out = getattr(args, "out", None)
    if not out or (args.command in _RUN_PYTEST and args.command != "bench"):  # run, repeat: pytest's own, or folders
        return
    if args.command == "report" or (args.command == "repro" and args.check):
        results_file.refuse_unless_folder(out)
    else:
        results_file.refuse_unless_ours(out)


def _command(args: argparse.Namespace, pytest_args: list[str], parser: argparse.ArgumentParser) -> int:
    if args.command == "run":
        return _run(pytest_args)
    if args.command == "cases":
        return _cases(args.cases)
    if args.command == "repro":
        return _repro(args, parser)
    if args.command == "profile":
        return _profile(args.dir, args.out)
    if args.command == "repeat":
        from harness.tools import repeat  # here, not at the top: report, diff and history run where only tabulate is installed

        if args.results:
            return repeat.compare_files(args.results, args.out)
        return repeat.run(args.runs, args.out, pytest_args, args.concurrent)
    if args.command == "bench":
        from harness.tools import bench  # here, not at the top: report, diff and history run where only tabulate is installed

        if args.results:
            if pytest_args or args.report_dir:
                parser.error("bench --results RESULTS.json runs nothing: it takes no pytest arguments and no --report-dir")
            return bench.of_results(args.results, args.out)
        return bench.main(pytest_args, args.out, args.report_dir)
    if args.command == "diff":
        return _diff(args.old, args.new, args.out)
    if args.command == "history":
        return _history(args.results, args.out)
    merged = merge([(p, results_file.load(p)) for p in args.results], rerun=args.rerun)
    for path in report.write(merged, args.out):
        print(path)
    return OK


def _diff(old_path: str, new_path: str, out: str | None) -> int:
    old, new = results_file.load(old_path), results_file.load(new_path)
    result = diff.compare(old, new)
    _written(out, diff.render(old_path, old, new_path, new, result), diff.headline(result).replace("**", ""))
    if old.fingerprint.mode != new.fingerprint.mode:
        print(f"warning: comparing a {old.fingerprint.mode} run with a {new.fingerprint.mode} run", file=sys.stderr)
    incomplete = _incomplete([(old_path, old), (new_path, new)])  # said either way; a regression among the compared cells
    return REGRESSED if result.regressed else incomplete  # is the first news, and neither lets a gate pass


def _history(paths: list[str], out: str | None) -> int:
    text, broke = history.history(paths)
    _written(out, text, broke or "nothing broke between neighbours")
    if broke:
        print(broke, file=sys.stderr)
    incomplete = _incomplete([(p, results_file.load(p)) for p in paths])
    return REGRESSED if broke else incomplete


def _incomplete(runs: list[tuple[str, Any]]) -> int:
    """INCOMPLETE, saying which, where a run compared is incomplete (its cells that never reported are not compared:
    a gate must not pass on a killed run); else 0."""
    # Cells it collected and never ran (a killed run): a merge of some --shard parts lacks the others' cells, says so, and
    # has none of its own missing.
    incomplete = [path for path, run in runs if run.missing]
    if not incomplete:
        return OK
    print(f"error: {' and '.join(incomplete)}: an incomplete run (killed or interrupted): its cells that never reported "
          "were not compared", file=sys.stderr)
    return INCOMPLETE


def _written(out: str | None, text: str, summary: str) -> None:
    """A tool's markdown: to --out, saying so with its summary line, or to standard output."""
    if not out:
        print(text)
        return
    _write_out(out, text)
    print(f"wrote {out}: {summary}")


def _write_out(out: str, text: str) -> None:
    try:
        results_file.write_atomic(out, text)
    except OSError as exc:
        raise OutputNotWritten(f"--out {out}: cannot write it: {exc.strerror or exc}") from None


def _run(pytest_args: list[str]) -> int:
    import pytest  # here, not at the top: report, diff and history run where only tabulate is installed

    from harness.tools.launch import matrix_args  # here, not at the top: report, diff and history run where only tabulate is installed

    return int(pytest.main(matrix_args(pytest_args)))


def _repro(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from harness.tools import reproduce

    if args.check:
        if args.cell or not args.out:
            parser.error("repro --check RESULTS.json takes --out DIR and no cell")
        return reproduce.check(args.check, args.out, args.cases, args.jobs, args.timeout, args.match, args.passing)
    if not args.cell:
        parser.error("repro needs a cell id (or --check RESULTS.json)")
    path = args.results or ("reports/results.json" if os.path.exists("reports/results.json") else None)
    text = reproduce.source(args.cell, results_file.load(path) if path else None, args.cases, args.device)
    if args.out:
        _write_out(args.out, text)
        print(f"wrote {args.out}: run it with `python {args.out}`")
    else:
        print(text, end="")
    return 0


def _count_or_all(text: str) -> int:
    """`--passing`'s value: a count, or `all` (-1, harness.tools.reproduce.ALL)."""
    if text == "all":
        return -1
    try:
        count = int(text)
    except ValueError:
        count = -2
    if count < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of cells (0, 1, 2, ...) or 'all'")
    return count


def _profile(directory: str, out: str | None) -> int:
    from harness.tools import profile  # here, not at the top: like bench, a tool of its own

    if not os.path.isdir(directory):
        raise UsageError(f"{directory} is not a folder (the one given to pytest --matrix --profile-dir)")
    text = profile.summarize(directory)
    print(text, end="")
    if out:
        _write_out(out, text)
    return OK


def _cases(specs: list[str] | None) -> int:
    from harness.authoring import catalog, registry  # here, not at the top: report, diff and history run where only tabulate is installed

    registry.importable(os.getcwd())  # as `python -m` does, for the console script too
    loaded = registry.load(specs or [registry.BUILTIN])
    print(catalog.table(loaded.cases.values()))
    for problem in loaded.problems:
        print(f"LEFT OUT {problem}", file=sys.stderr)
    return 1 if loaded.problems else 0


if __name__ == "__main__":
    sys.exit(main())

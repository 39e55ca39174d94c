"""Command line: `python -m harness report RESULTS.json [MORE.json ...] --out DIR`.

Rewrites SUPPORT.md, MATRIX.md and results.json from results files, merging runs that were split
(by `-k`, or across machines) as long as they measured the same environment.
"""

from __future__ import annotations

import argparse
import sys

from harness import report
from harness import results as results_file
from harness.results import Results, ResultsError

# Fingerprint fields that must agree before two runs' cells may share one chart.
SAME_ENVIRONMENT = ("mode", "torch", "triton", "cuda", "gpu", "compiler")


def merge(runs: list[tuple[str, Results]]) -> Results:
    (first_path, first), *rest = runs
    cells = {c.cell: c for c in first.cells}
    missing = set(first.missing)
    for path, run in rest:
        for key in SAME_ENVIRONMENT:
            if run.fingerprint.get(key) != first.fingerprint.get(key):
                raise ResultsError(
                    f"{path}: measured a different environment than {first_path} ({key}: "
                    f"{run.fingerprint.get(key)!r} vs {first.fingerprint.get(key)!r}); charts of different environments do not merge"
                )
        duplicated = sorted(set(cells) & {c.cell for c in run.cells})
        if duplicated:
            raise ResultsError(f"{path}: cells already in an earlier file: {', '.join(duplicated[:10])}")
        cells.update({c.cell: c for c in run.cells})
        missing |= set(run.missing)
    missing -= set(cells)
    wall = [r.wall_time_s for _, r in runs if r.wall_time_s is not None]
    fingerprint = dict(first.fingerprint)
    if rest:
        fingerprint["command"] = " ; ".join(r.fingerprint.get("command", "?") for _, r in runs)
    return Results(fingerprint=fingerprint, cells=list(cells.values()), complete=not missing, missing=sorted(missing), wall_time_s=sum(wall) if wall else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness")
    commands = parser.add_subparsers(dest="command", required=True)
    rep = commands.add_parser("report", help="write the reports from one or more results files (merged)")
    rep.add_argument("results", nargs="+", help="results.json files")
    rep.add_argument("--out", required=True, help="directory for SUPPORT.md, MATRIX.md, results.json")
    args = parser.parse_args(argv)
    try:
        merged = merge([(p, results_file.load(p)) for p in args.results])
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in report.write(merged, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Why cells fail, in the reports' words. Each failing cell's known issue (harness.model.known_issues), the
failures grouped by issue with counts and workarounds, and the two flags an upgrade check looks for: a failure
no known issue explains (the news), and one whose issue is marked fixed in a release the run has (a regression)."""

from __future__ import annotations

from collections import defaultdict

from tabulate import tabulate

from harness.model import known_issues
from harness.model.fingerprint import Fingerprint
from harness.model.known_issues import KnownIssue, Status
from harness.model.outcome import CellResult
from harness.model.results import Results
from harness.reporting import markdown

NO_KNOWN_ISSUE = "new failure, no known issue"
REPRO_HINT = "`python -m harness repro CELL --results results.json` writes a script that reproduces a cell alone"


def issue_link(entry: KnownIssue) -> str:
    return f"[{entry.key}]({entry.link})"


def flag(cell: CellResult, fingerprint: Fingerprint) -> str | None:
    """What an upgrade check must look at in a failing cell: no known issue explains it, or its issue is marked
    fixed in a release this run has. None for a known, unfixed failure and for a cell that does not fail."""
    if known_issues.unexplained(cell):
        return NO_KNOWN_ISSUE
    fixed = known_issues.still_failing_though_fixed(cell, fingerprint)
    return f"fails although marked fixed in {fixed}" if fixed else None


def cell_reason(cell: CellResult, fingerprint: Fingerprint) -> str:
    """A failing cell's known issue as MATRIX.md names it: link, status and workaround; or that none is known."""
    entry = known_issues.by_key().get(cell.known_issue or "")
    if entry is None:
        return "no known issue" if known_issues.unexplained(cell) else ""
    text = f"{issue_link(entry)} ({_status(entry)}); workaround: {entry.workaround}"
    flagged = flag(cell, fingerprint)
    return f"**{flagged}**: {text}" if flagged else text


def _status(entry: KnownIssue) -> str:
    return f"fixed in {entry.fixed_in}" if entry.status is Status.FIXED else entry.status.value


def flags_line(cells: list[CellResult], fingerprint: Fingerprint) -> str | None:
    """One line counting the flagged cells among `cells` (a diff's regressions and changes), or None."""
    flagged = [f for f in (flag(c, fingerprint) for c in cells) if f]
    if not flagged:
        return None
    unknown = flagged.count(NO_KNOWN_ISSUE)
    fixed = len(flagged) - unknown
    parts = [f"{unknown} {NO_KNOWN_ISSUE}" if unknown else "", f"{fixed} failing although marked fixed" if fixed else ""]
    return "**Flagged: " + ", ".join(p for p in parts if p) + "** (the last column names each)."


def _signature(cell: CellResult) -> str:
    kind = f"{cell.error_type}: " if cell.error_type else ""
    return f"{cell.outcome.value} @{cell.stage.value if cell.stage else '?'}: {kind}{(cell.message or '')[:120]}"


def section(results: Results) -> list[str]:
    """SUPPORT.md's "Why cells fail" (the results judged: known issues matched): the failures no known issue
    explains first, by signature; then those whose cause was read in the source but nobody has reported; then the
    upstream issues and documented limits, each with its cells, styles, rows and workaround."""
    failing = [c for c in results.cells if c.outcome in known_issues.EXPLAINED and not c.blamed_on]
    if not failing:
        return []
    fingerprint = results.fingerprint
    unknown: dict[str, list[CellResult]] = defaultdict(list)
    by_issue: dict[str, list[CellResult]] = defaultdict(list)
    entries = known_issues.by_key()
    for cell in failing:
        if cell.known_issue in entries:
            by_issue[cell.known_issue].append(cell)  # type: ignore[index]
        else:
            unknown[_signature(cell)].append(cell)
    untracked = {k: v for k, v in by_issue.items() if entries[k].status is Status.UNTRACKED}
    tracked = {k: v for k, v in by_issue.items() if k not in untracked}
    matched = sum(len(v) for v in tracked.values())
    out = [
        "## Why cells fail",
        "",
        f"{len(failing)} cells fail (fail, WRONG, crash, timeout; the environment's failures and the cases' and harness's "
        f"errors are apart): **{matched} match a known upstream issue or documented limit, "
        f"{sum(len(v) for v in untracked.values())} a cause read in the source that no upstream issue tracks yet, and "
        f"{sum(len(v) for v in unknown.values())} nothing known**. A cell is matched on its stage, error and message "
        "(harness.model.known_issues, each entry checked upstream on the day it names), never on its case. "
        f"{REPRO_HINT}, short enough to paste into an upstream issue.",
    ]
    if unknown:
        out += ["", f"### No known issue ({sum(len(v) for v in unknown.values())} cells)", "",
                tabulate([[markdown.code(s, in_table=True), len(cells), _styles(cells), _rows(cells), f"`{cells[0].cell.id}`"]
                          for s, cells in sorted(unknown.items(), key=lambda kv: -len(kv[1]))],
                         headers=["signature", "cells", "styles", "rows", "e.g."], tablefmt="github")]
    for title, group in (("Causes with no upstream issue yet", untracked), ("Known upstream issues and documented limits", tracked)):
        if not group:
            continue
        lines = []
        for key, cells in sorted(group.items(), key=lambda kv: -len(kv[1])):
            entry = entries[key]
            fixed = {f for f in (flag(c, fingerprint) for c in cells) if f}
            status = _status(entry) + (f"; **{', '.join(sorted(fixed))}**" if fixed else "")
            lines.append([f"{issue_link(entry)}: {entry.title}", status, len(cells), _styles(cells), _rows(cells),
                          entry.workaround, entry.checked])
        out += ["", f"### {title} ({sum(len(v) for v in group.values())} cells)", "",
                tabulate([[text.replace("|", "\\|") if isinstance(text, str) else text for text in line] for line in lines],
                         headers=["issue", "status", "cells", "styles", "rows", "workaround", "checked"], tablefmt="github")]
    return [*out, ""]


def _styles(cells: list[CellResult]) -> str:
    return ", ".join(sorted({c.wrapping.value for c in cells}))


def _rows(cells: list[CellResult]) -> str:
    rows = sorted({c.row.value for c in cells})
    return ", ".join(rows) if len(rows) <= 6 else f"{', '.join(rows[:5])} and {len(rows) - 5} more"

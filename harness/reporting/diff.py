"""Comparing two results files: what regressed, what got fixed, what changed, what is new or missing.

Modelled on PyTorch's benchmark accuracy check: a run is judged against another, cell by cell.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from tabulate import tabulate

from harness.model.fingerprint import Fingerprint
from harness.model.judging import judged, outcome_label
from harness.model.outcome import Attempt, CellResult, Outcome
from harness.model.results import Results
from harness.reporting import why
from harness.reporting.markdown import cell_text

# Fingerprint fields shown side by side in the header.
COMPARED: tuple[tuple[str, Callable[[Fingerprint], object]], ...] = (
    ("mode", lambda fp: fp.mode),
    ("torch", lambda fp: fp.torch),
    ("triton", lambda fp: fp.triton),
    ("CUDA", lambda fp: fp.cuda),
    ("GPU", lambda fp: fp.gpu.name or "none"),
    ("driver", lambda fp: fp.gpu.driver),
    ("C++ compiler", lambda fp: fp.compiler.version or fp.compiler.resolved),
    ("Python", lambda fp: fp.python),
    ("hypothesis profile", lambda fp: fp.profile),
    ("commit", lambda fp: str(fp.commit)[:12]),
)


@dataclass
class Diff:
    regressed: list[tuple[CellResult, CellResult]] = field(default_factory=list)  # passed, now does not
    fixed: list[tuple[CellResult, CellResult]] = field(default_factory=list)  # did not pass, now passes
    changed: list[tuple[CellResult, CellResult]] = field(default_factory=list)  # fails either way, differently
    new: list[CellResult] = field(default_factory=list)
    missing: list[CellResult] = field(default_factory=list)
    unchanged: int = 0


def signature(cell: CellResult) -> tuple[object, ...]:
    """What must stay the same for a cell to count as unchanged (Attempt.signature)."""
    return Attempt.of(cell).signature


def against_baseline(base: CellResult | None, now: CellResult, accept: str) -> str | None:
    """Why a cell fails the baseline check, or None. Improvements fail too, so the baseline stays true. `accept` is
    the command that reruns the run with --accept (`accept_command`), named for every change, a regression too:
    whether a regression is a break to accept or a bug to fix is the user's call."""
    if base is None or base.flaky or signature(base) == signature(now):
        return None
    if base.outcome is Outcome.PASS:
        return (f"REGRESSED: {now.cell.id} passed in the baseline, now {describe(now)}; if you accept this regression "
                f"(a known break, not a bug to fix), make it the baseline: `{accept}`")
    if now.outcome is Outcome.PASS:
        return f"IMPROVED: {now.cell.id} was {describe(base)} in the baseline and now passes; if this is expected, accept it: `{accept}`"
    return f"FAILURE CHANGED: {now.cell.id} was {describe(base)}, now {describe(now)}; if this is expected, accept it: `{accept}`"


def accept_command(run_args: Sequence[str], installed: bool) -> str:
    """The command that repeats a run with --accept, which rewrites its baseline with the run's outcomes: the run's
    own arguments (`config.invocation_params.args`) after `triton-compat-matrix run`, or `python -m harness run` in a
    checkout that is not installed, less what those add themselves (harness.tools.launch.matrix_args: --matrix, and
    -p harness.plugin where the package is not installed). Plain pytest with --baseline and --accept would fail (the
    matrix's options need --matrix), and a run's --cases, -k or --matrix-profile must be repeated to accept its cells."""
    kept: list[str] = []
    args = list(run_args)
    while args:
        arg = args.pop(0)
        if arg == "-p" and args[:1] == ["harness.plugin"]:
            args.pop(0)
        elif arg not in ("--matrix", "--accept", "-pharness.plugin"):
            kept.append(arg)
    launcher = "triton-compat-matrix run" if installed else "python -m harness run"
    return " ".join([launcher, *(shlex.quote(arg) for arg in [*kept, "--accept"])])


def compare(old: Results, new: Results) -> Diff:
    """Cell by cell, each run judged as its reports judge it (environment blamed); neither run is changed."""
    before, after = judged(old).by_cell(), judged(new).by_cell()
    diff = Diff()
    for cell in sorted(set(before) | set(after), key=lambda c: c.id):
        was, now = before.get(cell), after.get(cell)
        if was is None:
            diff.new.append(now)  # type: ignore[arg-type]
        elif now is None:
            diff.missing.append(was)
        elif signature(was) == signature(now):
            diff.unchanged += 1
        elif was.outcome is Outcome.PASS:
            diff.regressed.append((was, now))
        elif now.outcome is Outcome.PASS:
            diff.fixed.append((was, now))
        else:
            diff.changed.append((was, now))
    return diff


def describe(cell: CellResult) -> str:
    """A cell's outcome and, for a failure, the first line of its error."""
    text = outcome_label(cell)
    if cell.outcome is not Outcome.PASS and cell.message:
        text += f": {cell.message}"
    return text[:200]


def pairs_table(pairs: list[tuple[CellResult, CellResult]], old: str, new: str, fingerprint: Fingerprint | None = None) -> str:
    """A cell a line, with its outcome in each run (and, where it fails, the first line of its error); given the newer
    run's fingerprint, what an upgrade check must look at in it (harness.reporting.why.flag) or its known issue."""
    if fingerprint is None:
        return tabulate([[f"`{a.cell.id}`", cell_text(describe(a)), cell_text(describe(b))] for a, b in pairs],
                        headers=["cell", old, new], tablefmt="github")
    return tabulate([[f"`{a.cell.id}`", cell_text(describe(a)), cell_text(describe(b)), _why(b, fingerprint)] for a, b in pairs],
                    headers=["cell", old, new, "why"], tablefmt="github")


def _why(cell: CellResult, fingerprint: Fingerprint) -> str:
    flagged = why.flag(cell, fingerprint)
    if flagged:
        return f"**{flagged}**"
    return cell.known_issue or ""


def headline(diff: Diff) -> str:
    return (f"**{len(diff.regressed)} regressed, {len(diff.fixed)} fixed, {len(diff.changed)} failing differently, "
            f"{len(diff.new)} new, {len(diff.missing)} missing**, {diff.unchanged} unchanged")


def render(old_path: str, old: Results, new_path: str, new: Results, diff: Diff) -> str:
    out = [f"# Matrix diff: `{old_path}` -> `{new_path}`", ""]
    if old.fingerprint.mode != new.fingerprint.mode:
        out += [
            f"> **WARNING: these runs measured different devices ({old.fingerprint.mode} vs "
            f"{new.fingerprint.mode}).** Differences below mix the device with the versions; compare runs "
            "of the same kind of machine.",
            "",
        ]
    rows = [[name, get(old.fingerprint), get(new.fingerprint), "" if get(old.fingerprint) == get(new.fingerprint) else "changed"]
            for name, get in COMPARED]
    out += [tabulate(rows, headers=["", "old", "new", ""], tablefmt="github"), ""]
    for path, run in ((old_path, old), (new_path, new)):
        if run.missing:  # cells it collected and never ran: a killed or interrupted run
            out += [f"> **WARNING: {path} is an incomplete run** ({run.interrupted or 'stopped early'}): {len(run.missing)} of its "
                    "cells never reported, and are compared as missing or new, not as outcomes.", ""]
    for path, run in ((old_path, old), (new_path, new)):
        carried = Counter(c.carried_from for c in run.cells if c.carried_from)
        for source, count in sorted(carried.items()):  # their outcomes are that run's: an unchanged one measured nothing again
            out += [f"> {path}: {count} cells carried over from {source}, not run again (--baseline).", ""]
    out.append(f"{headline(diff)}.")
    flagged = why.flags_line([b for _, b in diff.regressed + diff.changed] + diff.new, new.fingerprint)
    if flagged:
        out += ["", flagged]
    for title, pairs in (("Regressed (passed before, not now)", diff.regressed), ("Fixed", diff.fixed),
                         ("Failing differently", diff.changed)):
        if pairs:
            out += ["", f"## {title}", "", pairs_table(pairs, "old", "new", None if pairs is diff.fixed else new.fingerprint)]
    for title, cells in (("New cells", diff.new), ("Missing cells (in the old run only)", diff.missing)):
        if cells:
            fingerprint = new.fingerprint if cells is diff.new else old.fingerprint
            out += ["", f"## {title}", "", tabulate([[f"`{c.cell.id}`", cell_text(describe(c)), _why(c, fingerprint)] for c in cells],
                                                    headers=["cell", "outcome", "why"], tablefmt="github")]
    out.append("")
    return "\n".join(out)

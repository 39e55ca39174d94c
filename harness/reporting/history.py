"""One chart across several environments (torch, Triton, GPU), oldest first. How each wrapping style fared
on each compile path in each, then the cells that broke, were fixed or fail differently between neighbours.

Each neighbouring pair is compared as `python -m harness diff` compares two runs (harness.reporting.diff.compare);
a cell skipped on either side is not compared, since a row a profile left out, or one that needs CUDA, says
nothing about the versions. This module imports no torch: it reads results files only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tabulate import tabulate

from harness.model import results as results_file
from harness.model.cell import Cell
from harness.model.columns import STYLES, Wrapping, present
from harness.model.errors import ResultsError
from harness.model.fingerprint import SAME_ENVIRONMENT, Fingerprint
from harness.model.judging import Verdict, by_row_and_style, judged, pass_counts, verdict
from harness.model.outcome import CellResult, Outcome
from harness.model.results import Results, merge
from harness.model.rows import Row
from harness.model.settings import DEFAULT_PROFILE
from harness.reporting import diff, why

# diff's fingerprint fields, by name: the headings and the legend show them as the diff's header does.
FIELDS = dict(diff.COMPARED)

# An entry's styles, in the charts' column order, the control last: it says whether the path itself works.
ENTRY_STYLES = (*STYLES, Wrapping.CONTROL)

# SUPPORT.md's verdicts, as one symbol each so that five styles fit in one table cell.
SYMBOLS = {Verdict.YES: "✓", Verdict.PARTIAL: "◐", Verdict.NO: "✗", Verdict.NONE: "–"}
MEANINGS = {Verdict.YES: "every case counted passed", Verdict.PARTIAL: "some did", Verdict.NO: "none did",
            Verdict.NONE: "no case counted"}


def identity(fingerprint: Fingerprint) -> tuple[str, ...]:
    """What makes a column: the fields `report` merges by, and the hypothesis profile. A profile decides which
    rows a run leaves out (`quick` checks the costliest rows on a few cases only) and how many examples a cell
    draws (2 against 20), so two profiles' runs of one environment are two measurements, not two halves of one:
    merged, one would hide the other's cells."""
    return (*(json.dumps(fingerprint.recorded(name), sort_keys=True) for name in SAME_ENVIRONMENT), str(fingerprint.profile))


def environment_words(fingerprint: Fingerprint) -> str:
    """The environment in a few words: "torch 2.11.0+cu130, Triton 3.6.0, NVIDIA H200, commit 358b47f"."""
    device = "CPU interpreter" if fingerprint.interpreter else FIELDS["GPU"](fingerprint)
    parts = [f"torch {fingerprint.torch}", f"Triton {fingerprint.triton}", str(device)]
    if fingerprint.profile != DEFAULT_PROFILE:  # the GPU runs' profile goes without saying
        parts.append(f"{fingerprint.profile} profile")
    parts.append(f"commit {FIELDS['commit'](fingerprint)}")
    return ", ".join(parts)


@dataclass
class Column:
    """One environment: the results files that measured it, merged and judged as the reports judge them."""

    number: int
    files: list[str]
    results: Results

    @property
    def name(self) -> str:
        return f"({self.number})"

    @property
    def heading(self) -> str:
        return f"{self.name} {environment_words(self.results.fingerprint)}"


def columns(paths: list[str]) -> list[Column]:
    """The environments of the files, in the order each first appears; files of one environment share its
    column. Raises ResultsError naming the file to fix, or saying what is missing."""
    groups: dict[tuple[str, ...], list[tuple[str, Results]]] = {}
    for path in paths:
        run = results_file.load(path)
        groups.setdefault(identity(run.fingerprint), []).append((path, run))
    if len(groups) < 2:
        (runs,) = groups.values()
        raise ResultsError(
            f"{', '.join(paths)}: {'all measured' if len(paths) > 1 else 'measured'} one environment "
            f"({environment_words(runs[0][1].fingerprint)}); history charts at least two: add a results file of another "
            "environment (to compare two runs of one environment, use `python -m harness diff`)"
        )
    return [Column(number, [path for path, _ in runs], judged(_merged(runs))) for number, runs in enumerate(groups.values(), 1)]


def _merged(runs: list[tuple[str, Results]]) -> Results:
    try:
        return merge(runs)
    except ResultsError as exc:
        raise ResultsError(
            f"{exc}. History puts the files of one environment and profile in one column, so they must hold "
            "different cells (a run split with -k): give one of these runs, or compare them with `python -m harness diff`"
        ) from None


@dataclass
class Step:
    """Two neighbouring environments compared cell by cell."""

    older: Column
    newer: Column
    broke: list[tuple[CellResult, CellResult]] = field(default_factory=list)  # passed in the older, not in the newer
    fixed: list[tuple[CellResult, CellResult]] = field(default_factory=list)  # did not pass in the older, passes in the newer
    changed: list[tuple[CellResult, CellResult]] = field(default_factory=list)  # fails in both, differently
    unchanged: int = 0
    only_older: int = 0
    only_newer: int = 0
    skipped: int = 0  # in both, skipped in one or both: not compared

    @property
    def not_compared(self) -> int:
        return self.only_older + self.only_newer + self.skipped


def step(older: Column, newer: Column) -> Step:
    found = diff.compare(older.results, newer.results)
    before, after = older.results.by_cell(), newer.results.by_cell()
    # diff.compare counts a cell that passed and is now skipped as regressed; here it is left out.
    skipped = {cell for cell in before.keys() & after.keys() if Outcome.SKIPPED in (before[cell].outcome, after[cell].outcome)}
    done = Step(older, newer, broke=_compared(found.regressed, skipped), fixed=_compared(found.fixed, skipped),
                changed=_compared(found.changed, skipped), only_older=len(found.missing), only_newer=len(found.new),
                skipped=len(skipped))
    done.unchanged = len(before.keys() & after.keys()) - len(skipped) - len(done.broke) - len(done.fixed) - len(done.changed)
    return done


def _compared(pairs: list[tuple[CellResult, CellResult]], skipped: set[Cell]) -> list[tuple[CellResult, CellResult]]:
    return [(a, b) for a, b in pairs if a.cell not in skipped]


def steps(chart_columns: list[Column]) -> list[Step]:
    return [step(older, newer) for older, newer in zip(chart_columns, chart_columns[1:])]


def chart(chart_columns: list[Column]) -> str:
    """A row per compile path, a column per environment; each entry says how every style fared there."""
    grouped = [by_row_and_style(column.results.cells) for column in chart_columns]
    rows = [[row.spec.title, *[_entry(by_row.get(row)) for by_row in grouped]]
            for row in Row if any(row in by_row for by_row in grouped)]
    return tabulate(rows, headers=["row", *[column.heading for column in chart_columns]], tablefmt="github")


def _entry(by_style: dict[Wrapping, list[CellResult]] | None) -> str:
    if not by_style:
        return "not run"
    return "<br>".join(_style_entry(style, by_style.get(style, [])) for style in present(ENTRY_STYLES, by_style))


def _style_entry(style: Wrapping, cells: list[CellResult]) -> str:
    passed, total = pass_counts(cells)
    text = f"{style.value} {SYMBOLS[verdict(passed, total)]}" + (f" {passed}/{total}" if total else "")
    apart = [f"{count} {what}" for what, count in (("env", sum(bool(c.blamed_on) for c in cells)),
                                                 ("error", sum(c.outcome is Outcome.ERROR for c in cells))) if count]
    return text + (f" ({', '.join(apart)})" if apart else "")


def render(chart_columns: list[Column], compared: list[Step]) -> str:
    symbols = "; ".join(f"{SYMBOLS[v]} {v.value}: {MEANINGS[v]}" for v in Verdict)
    styles = present(ENTRY_STYLES, [c for column in chart_columns for c in column.results.cells])
    out = [
        f"# History: the matrix in {len(chart_columns)} environments, oldest first",
        "",
        "A column per environment (torch, Triton, CUDA, GPU, C++ compiler, and the hypothesis profile, which decides "
        "the rows a run checks and how many examples a cell draws); results files of one environment and profile "
        "share their column. The environments, with the files each came from, are listed under the chart.",
        "",
        chart(chart_columns),
        "",
        f"Each entry gives, for every wrapping style ({', '.join(s.value for s in styles)}: the control is the "
        f"case's plain PyTorch reference), SUPPORT.md's verdict and the cases that passed of those counted: {symbols}. "
        "As in SUPPORT.md, skipped cells are not counted (the profile left the row out, the row does not apply to the "
        "case or style, it needs CUDA), nor errors of the case or the harness (*error*), nor failures the environment "
        "is blamed for because the case's control fails on that path too (*env*). *not run*: no cell of that row "
        "in that environment.",
        "",
        "## Environments",
        "",
        _environments(chart_columns),
        "",
        "## Changes between neighbouring environments",
        "",
        "Each environment against the one before it, cell by cell, as `python -m harness diff` compares two runs "
        "(outcome, stage and exception type; not the message's words): a cell **broke in** the newer when it passed "
        "in the older and does not pass in the newer (wrong, fail, error, timeout, crash), was **fixed in** it the "
        "other way round, and **fails differently** when it fails in both, at another stage or with another "
        "exception. A cell in only one of the two, or skipped in either, is not compared.",
        "",
        tabulate([[f"{s.older.name} -> {s.newer.name}", len(s.broke), len(s.fixed), len(s.changed), s.unchanged, s.not_compared]
                  for s in compared], headers=["step", "broke in", "fixed in", "fail differently", "unchanged", "not compared"],
                 tablefmt="github"),
    ]
    for s in compared:
        out += ["", *_step_section(s)]
    out.append("")
    return "\n".join(out)


def _environments(chart_columns: list[Column]) -> str:
    fingerprints = [column.results.fingerprint for column in chart_columns]
    rows = [[name, *[get(fp) for fp in fingerprints]] for name, get in diff.COMPARED]
    rows += [
        ["examples a cell", *[fp.hypothesis.max_examples for fp in fingerprints]],
        ["run at", *[fp.time for fp in fingerprints]],
        ["cells", *[_cells_line(column.results) for column in chart_columns]],
        ["results files", *[", ".join(f"`{path}`" for path in column.files) for column in chart_columns]],
    ]
    return tabulate(rows, headers=["", *[column.name for column in chart_columns]], tablefmt="github")


def _cells_line(results: Results) -> str:
    line = f"{len(results.cells)}"
    if results.missing:
        line += f"; incomplete: {len(results.missing)} never reported"
    shards = results.fingerprint.shards
    if shards is not None and len(shards.merged) < shards.count:
        held = ", ".join(f"{k}/{shards.count}" for k in shards.merged)
        line += f"; part {held} of a --shard split" if len(shards.merged) == 1 else f"; parts {held} of a --shard split"
    return line


def _step_section(s: Step) -> list[str]:
    older, newer = s.older.results.fingerprint, s.newer.results.fingerprint
    moved = "; ".join(f"{name} {get(older) or 'none'} -> {get(newer) or 'none'}"
                      for name, get in diff.COMPARED if get(older) != get(newer))
    out = [f"### {s.older.name} -> {s.newer.name}: {moved or 'the same fingerprint'}", ""]
    if older.mode != newer.mode:
        out += [f"> **These environments are different devices ({older.mode} vs {newer.mode}).** The changes "
                "below mix the device with the versions.", ""]
    out.append(
        f"**{len(s.broke)} broke in {s.newer.name}**, {len(s.fixed)} fixed in {s.newer.name}, {len(s.changed)} fail "
        f"differently, {s.unchanged} unchanged; {s.not_compared} not compared ({s.only_older} only in {s.older.name}, "
        f"{s.only_newer} only in {s.newer.name}, {s.skipped} skipped in one or both)."
    )
    flagged = why.flags_line([b for _, b in s.broke + s.changed], newer)
    if flagged:
        out += ["", flagged]
    # The cells that broke are what a reader comes for: their list is open; the others fold.
    for title, pairs, folded in ((f"Broke in {s.newer.name}", s.broke, False), (f"Fixed in {s.newer.name}", s.fixed, True),
                                 ("Fail differently", s.changed, True)):
        if pairs:
            summary = f"{title}: {len(pairs)} cell{'s' if len(pairs) != 1 else ''}"
            out += ["", f"<details{'' if folded else ' open'}><summary>{summary}</summary>", "",
                    diff.pairs_table(pairs, s.older.name, s.newer.name, None if pairs is s.fixed else newer), "", "</details>"]
    return out


def broke_summary(compared: list[Step]) -> str | None:
    """One line for a CI log naming the steps in which cells broke, or None when none did."""
    broken = [s for s in compared if s.broke]
    if not broken:
        return None
    return "history: cells broke in " + "; ".join(
        f"{s.newer.heading} (after {s.older.name}): {len(s.broke)}" for s in broken)


def history(paths: list[str]) -> tuple[str, str | None]:
    """The markdown, and the line saying what broke (None when nothing did). Raises ResultsError for bad input."""
    chart_columns = columns(paths)
    compared = steps(chart_columns)
    return render(chart_columns, compared), broke_summary(compared)

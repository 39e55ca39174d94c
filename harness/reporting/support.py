"""SUPPORT.md: the tutorial-style chart, a row per compile path and a column per wrapping style.

With what the cells found, why they fail, the library's own op where a case names one and, with --perf, their speed."""

from __future__ import annotations

import math
from collections import defaultdict

from tabulate import tabulate

from harness.model.cell import Cell
from harness.model.columns import GENERATED_STYLES, STYLES, Wrapping, present
from harness.model.fingerprint import Fingerprint
from harness.model.judging import FAILED, Verdict, by_row_and_style, counted_cells, judged, outcome_label, pass_counts, verdict
from harness.model.outcome import CellResult, Fault, InGraph, Outcome
from harness.model.results import Results
from harness.model.rows import Row
from harness.reporting import picture as matrix_picture
from harness.reporting import tutorial, why
from harness.reporting.header import environment_lines
from harness.reporting.markdown import cell_text


def _verdict_text(passed: int, total: int) -> str:
    found = verdict(passed, total)
    return found.value if found is Verdict.NONE else f"{found.value} ({passed}/{total})"


def tutorial_chart(results: Results) -> tuple[str, list[str]]:
    """The tutorial's chart with every entry measured; returns the table and the disagreements."""
    results = judged(results)
    index: dict[tuple[Row, Wrapping], list[CellResult]] = defaultdict(list)
    for cell in results.cells:
        index[(cell.row, cell.wrapping)].append(cell)
    rows, disagreements = [], []
    styles = present(STYLES, results.cells)
    for question in tutorial.QUESTIONS:
        links = ", ".join(f"[{p.value}](MATRIX.md#{p.value})" for p in question.rows)
        line = [f"{question.title} ({links})"]
        for style in styles:
            cells = [c for p in question.rows for c in index.get((p, style), [])]
            passed, counted = pass_counts(cells, question.traces_into)
            entry = _verdict_text(passed, counted)
            if question.in_process:
                only_there = _in_process_only(cells, [c for p in question.in_process for c in index.get((p, style), [])])
                if only_there:
                    entry += f"; {len(only_there)} more run only in the process that built them"
            claim = question.claims.get(tutorial.COLUMN_OF.get(style, ""))  # the tutorial has no shipped column
            if claim is not None and counted:
                if tutorial.agrees(claim, passed, counted):
                    entry += f"; tutorial: {claim}"
                else:
                    entry = f"**{entry}; tutorial says {claim}** ⚠"
                    # the cells that contradict the claim
                    if question.traces_into:
                        read = [c for c in cells if c.kernel_in_graph in (InGraph.TRACED, InGraph.OPAQUE)]
                        shown = [c.cell.id for c in read if (c.kernel_in_graph is InGraph.TRACED) == (claim.lower() == "no")]
                    else:
                        shown = [c.cell.id for c in counted_cells(cells) if (c.outcome is Outcome.PASS) == (claim.lower() == "no")]
                    disagreements.append(
                        f"- **{question.title}**, {style.title}: tutorial says *{claim}*, measured {_verdict_text(passed, counted)} "
                        f"({links}): {listed(sorted(shown))}"
                    )
            line.append(entry)
        rows.append(line)
    table = tabulate(rows, headers=["", *[s.title for s in styles]], tablefmt="github")
    return table, disagreements


def _in_process_only(cells: list[CellResult], in_process: list[CellResult]) -> list[str]:
    """The cases whose cell fails here but passes in the process that built the artifact."""
    passed_there = {c.case for c in in_process if c.outcome is Outcome.PASS}
    return sorted(c.case for c in cells if c.outcome in FAILED and not c.blamed_on and c.case in passed_there)


def picture_lines(drawn: bool) -> list[str]:
    """SUPPORT.md's lines about the matrix's picture: the picture itself where it was drawn beside the chart,
    else how to get one."""
    if drawn:
        return [f"![The whole matrix: one panel per wrapping style, its cases down and compile paths across, each square "
                f"coloured by its cell's outcome (pass, WRONG, fail, crash, timeout, error, env, skipped)]({matrix_picture.FILENAME})"]
    return [f"*A picture of the whole matrix ({matrix_picture.FILENAME}) is drawn beside this chart where matplotlib is "
            f"installed: `{matrix_picture.INSTALL}`, then `python -m harness report results.json --out DIR`.*"]


def listed(cell_ids: list[str], shown: int = 8) -> str:
    """Cell ids as code, the first `shown` of them, and how many more there are."""
    more = f", and {len(cell_ids) - shown} more" if len(cell_ids) > shown else ""
    return ", ".join(f"`{c}`" for c in cell_ids[:shown]) + more


def _disagreements_heading(fingerprint: Fingerprint) -> list[str]:
    if not fingerprint.interpreter:
        return ["### Where the tutorial is wrong for these versions", ""]
    return ["### Where this run disagrees with the tutorial", "",
            "This run used Triton's CPU interpreter, not a GPU: a disagreement here may be the interpreter's (a launch "
            "Dynamo cannot trace when interpreted, a kernel run as Python), not these versions'. Read it against a GPU chart.",
            ""]


def support_chart(results: Results, picture_drawn: bool = False) -> str:
    """The chart; `picture_drawn`: whether the matrix's picture lies beside it (see `write`)."""
    results = judged(results)
    by_row = by_row_and_style(results.cells)
    styles = present(STYLES, results.cells)
    rows = []
    for row in Row:
        if row not in by_row:
            continue
        control = by_row[row].get(Wrapping.CONTROL, [])
        line = [f"[{row.spec.title}](MATRIX.md#{row.value})"]
        for style in styles:
            line.append(_support_entry(by_row[row].get(style, []), row))
        line.append(_control_entry(control))
        rows.append(line)
    headers = ["row", *[s.title for s in styles], "control (PyTorch reference)"]
    chart, disagreements = tutorial_chart(results)
    text = [
        "# Support chart: user-defined Triton kernels vs PyTorch compile paths",
        "",
        *environment_lines(results),
        "",
        *picture_lines(picture_drawn),
        "",
        "## The tutorial's chart, measured",
        "",
        f"Every entry is measured here; beside it, the answer published in the {tutorial.SOURCE}. "
        "Entries marked ⚠ disagree with it. *Traces into* is read off the graph Inductor compiled "
        "(a `triton_kernel_wrapper` node: traced; a call of the opaque operator: not).",
        "",
        chart,
        "",
        *_disagreements_heading(results.fingerprint),
        *(disagreements or ["- nowhere: every measured entry agrees with the tutorial"]),
        "",
        "## Every row",
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
        "Each entry counts the cases whose cell passed: **Yes** all, **No** none, **Partial** some; **n/a**: no cell of "
        "that row and column ran (the row does not apply to the style, or every cell was skipped: MATRIX.md says why). "
        "Cells where the case's plain PyTorch control also fails on that path are the environment's fault "
        "and are counted apart (`env`); where the control is the harness's error instead (the harness's own means "
        "broke, as a module it named or the C++ runner it builds), the cells failing there are the harness's errors, "
        "counted apart too, never `env`; `skipped` cells are left out. The control column says whether the "
        "path itself works here. *passes, degraded*: cells that passed but lost something silently (a float scalar "
        "compiled as fp64, a tensor the mutation analysis marks written that the kernel does not write or the reverse, "
        "CUDA graphs skipped), said in MATRIX.md. Every entry links to its row of [MATRIX.md](MATRIX.md), which shows each "
        "cell with its outcome and the first line of its error.",
        "",
        *_shipped_section(results, by_row),
        *why.section(results),
        *_findings(results),
        *_speed_section(results),
    ]
    return "\n".join(text)


def _shipped_section(results: Results, by_row: dict[Row, dict[Wrapping, list[CellResult]]]) -> list[str]:
    """The ops as their libraries ship them, each against the generated styles on the same case: where the
    library's own op fails a row that some generated style passes, that style is the way out."""
    shipped = sorted({c.case for c in results.cells if c.wrapping is Wrapping.SHIPPED})
    if not shipped:
        return []
    lines = ["## The libraries' own ops (shipped)", "",
             "Each case below names the op its library ships (a torch.library operator, an autograd.Function or a plain "
             "function); its column runs that op as the library's users call it. Per case: the rows where the shipped op "
             "fails, and the generated styles that pass there.", ""]
    for case in shipped:
        failing = []
        for row, styles in by_row.items():
            mine = [c for c in styles.get(Wrapping.SHIPPED, []) if c.case == case]
            if not mine or mine[0] not in counted_cells(mine) or mine[0].outcome is Outcome.PASS:
                continue
            passing = [s.title for s in GENERATED_STYLES if any(c.case == case and c.outcome is Outcome.PASS for c in styles.get(s, []))]
            failing.append(f"[{row.value}](MATRIX.md#{row.value}) ({outcome_label(mine[0])}"
                           + (f"; passes as {', '.join(passing)}" if passing else "") + ")")
        cells = [c for c in results.cells if c.case == case and c.wrapping is Wrapping.SHIPPED]
        passed, counted = pass_counts(cells)
        if not counted:  # every cell skipped (a library that needs a GPU, on a CPU)
            lines.append(f"- `{case}`: no row counted here ({len(cells)} cells not tested: [MATRIX.md](MATRIX.md) says why)")
            continue
        lines.append(f"- `{case}`: passes {passed} of the {counted} rows counted" +
                     (f"; fails on {', '.join(failing)}" if failing else ""))
    return [*lines, ""]


def _findings(results: Results) -> list[str]:
    """Where the cases disagree: on each row and style where some cases pass and others do not, the cases on
    the smaller side, gathered by case. A kernel that breaks where the others work (or works where they
    break) is what a reader of the chart most needs to see; each entry links to its row in MATRIX.md."""
    groups: dict[tuple[Row, Wrapping], list[CellResult]] = defaultdict(list)
    for cell in results.cells:
        groups[(cell.row, cell.wrapping)].append(cell)
    odd: dict[tuple[str, str], dict[Row, list[str]]] = defaultdict(lambda: defaultdict(list))  # (case, how) -> row -> styles
    for row in Row:
        for style in Wrapping:
            kept = counted_cells(groups.get((row, style), []))
            passed = [c for c in kept if c.outcome is Outcome.PASS]
            failed = [c for c in kept if c.outcome is not Outcome.PASS]
            if not passed or not failed:
                continue
            if len(failed) <= len(passed):
                for c in failed:
                    odd[(c.case, "fails where most cases pass")][row].append(f"{style.title} ({outcome_label(c)})")
            else:
                for c in passed:
                    odd[(c.case, "passes where most cases fail")][row].append(style.title)
    if not odd:
        return []
    lines = ["## Findings: where the cases disagree", "",
             "On each row and style where some cases pass and others do not, the cases on the smaller side, by case "
             "(every cell and its error is in MATRIX.md):", ""]
    for (case, how), rows in sorted(odd.items()):
        cells = sum(len(styles) for styles in rows.values())
        where = "; ".join(f"[{row.spec.title}](MATRIX.md#{row.value}): {', '.join(styles)}" for row, styles in rows.items())
        lines.append(f"- `{case}` {how}, in {cells} cell{'s' if cells != 1 else ''}: {where}")
    return [*lines, ""]


def _speed_section(results: Results) -> list[str]:
    rows = speed_table(results.cells)
    if not rows:
        return []
    shapes = sorted({f"{c.case} {tuple(c.perf.shape)} {c.perf.dtype}" for c in results.cells if c.perf})
    errors = [c for c in results.cells if c.perf and c.perf.error is not None]
    lines = [
        "## Speed vs eager (`--perf`)",
        "",
        "Median latency of each passing cell's artifact (`triton.testing.do_bench`), as the raw kernel's eager "
        "latency divided by it: above 1.00x is faster than calling the raw kernel. Training rows are compared "
        "with the autograd.Function in eager mode. Each entry is the geometric mean over the cases timed "
        "(how many in brackets); every cell's figure is in [MATRIX.md](MATRIX.md).",
        "",
        tabulate(rows, headers=["row", *[w.value for w in present(Wrapping, results.cells)]], tablefmt="github"),
        "",
        f"Benchmark inputs: {'; '.join(shapes)}.",
        "",
    ]
    if errors:
        lines += [f"- `{c.cell.id}` failed at the benchmark size: {cell_text(c.perf.error)}" for c in errors if c.perf] + [""]
    return lines


def speedup(cell: CellResult, by_cell: dict[Cell, CellResult]) -> float | None:
    """The speed baseline's latency / this cell's (`--perf`): above 1 is faster than the raw kernel in eager."""
    if not cell.perf or cell.perf.median_ms is None:
        return None
    base = by_cell.get(cell.cell.speed_baseline())
    if base is None or not base.perf or base.perf.median_ms is None or cell.perf.median_ms <= 0:
        return None
    return base.perf.median_ms / cell.perf.median_ms


def speed_table(cells: list[CellResult]) -> list[list[str]]:
    """Rows of (row, one geometric-mean speed vs eager per wrapping, over the cases that passed)."""
    by_cell = {c.cell: c for c in cells}
    ratios: dict[Row, dict[Wrapping, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in cells:
        ratio = speedup(c, by_cell)
        if ratio is not None:
            ratios[c.row][c.wrapping].append(ratio)
    rows = []
    for row in Row:
        if row not in ratios:
            continue
        line = [row.spec.title]
        for w in present(Wrapping, cells):
            values = ratios[row].get(w)
            line.append(f"{math.exp(sum(map(math.log, values)) / len(values)):.2f}x ({len(values)})" if values else "")
        rows.append(line)
    return rows


def _control_entry(control: list[CellResult]) -> str:
    control = [c for c in control if c.outcome is not Outcome.SKIPPED]
    if not control:
        return "n/a"
    failed = [c for c in control if c.outcome in FAILED]
    # A control that is an error says nothing of the path: counted apart, never as passing (a harness error's row
    # has its styles' failures there made the harness's too, harness.model.judging.blame_harness)
    errors = [c for c in control if c.outcome is Outcome.ERROR]
    apart = f"; {', '.join(sorted({outcome_label(c) for c in errors}))} ({len(errors)})" if errors else ""
    measured = len(control) - len(errors)
    if not failed:
        return (f"passes ({measured}/{measured})" if measured else "n/a") + apart
    how = sorted({outcome_label(c) for c in failed})
    return f"**FAILS ({len(failed)}/{measured}): path broken here**: {', '.join(how)}{apart}"


def _support_entry(cells: list[CellResult], row: Row) -> str:
    if not cells:
        return ""
    kept = counted_cells(cells)
    passed = [c for c in kept if c.outcome is Outcome.PASS]
    env = [c for c in cells if c.blamed_on]
    notes = []
    if env:
        notes.append(f"{len(env)} env: control fails too")
    flaky = [c for c in cells if c.flaky]
    if flaky:
        notes.append(f"{len(flaky)} flaky")
    for fault in Fault:
        errors = [c for c in cells if c.outcome is Outcome.ERROR and (c.fault or Fault.HARNESS) is fault]
        if errors:
            notes.append(f"{len(errors)} {fault.value} error{'s' if len(errors) > 1 else ''}")
    if row is Row.COMPILE_DEFAULT:
        breaks = sum(c.graph_breaks or 0 for c in passed)
        if breaks:
            notes.append(f"{breaks} graph breaks")
    degraded = [c for c in passed if c.degradations]
    if degraded:
        notes.append(f"{len(degraded)} passes, degraded")
    entry = "n/a: environment" if env and not kept else _verdict_text(len(passed), len(kept))
    return entry + (f"; {', '.join(notes)}" if notes else "")

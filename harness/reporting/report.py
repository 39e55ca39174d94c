"""SUPPORT.md (the tutorial-style chart), MATRIX.md (every cell) and results.json, from cell results."""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict

from tabulate import tabulate

from harness.model import results as results_file
from harness.model.cell import Cell
from harness.model.columns import GENERATED_STYLES, STYLES, Wrapping, present
from harness.model.fingerprint import Fingerprint
from harness.model.judging import FAILED, Verdict, by_row_and_style, counted_cells, judged, outcome_label, pass_counts, verdict
from harness.model.outcome import Attempt, CellResult, Fault, InGraph, Outcome
from harness.model.results import Results
from harness.model.rows import Row
from harness.reporting import markdown
from harness.reporting import picture as matrix_picture
from harness.reporting import tutorial, why
from harness.reporting.figures import figures, prebuilt_text, timed_cells, timeline_text
from harness.reporting.markdown import cell_text


def _environment_lines(results: Results) -> list[str]:
    fp = results.fingerprint
    gpu, cxx, hypothesis = fp.gpu, fp.compiler, fp.hypothesis
    lines = []
    if fp.interpreter:
        lines.append(
            "> **No GPU: kernels ran in Triton's CPU interpreter (`TRITON_INTERPRET=1`).** PyTorch does not trace "
            "interpreted kernels, and Inductor/AOTInductor built CPU code, so this chart says how the harness "
            "behaves on CPU, not what a GPU user will see."
        )
        lines.append("")
    device = f"{gpu.name} (driver {gpu.driver}, CUDA {fp.cuda})" if gpu.available else "CPU only"
    lines += [
        f"- device: {device}{f'; {fp.cpus} CPUs ({fp.cpu})' if fp.cpu else ''}",
        f"- torch {fp.torch}, triton {fp.triton}, Python {fp.python}",
        f"- C++ compiler: CXX={cxx.cxx!s}, resolved `{cxx.path or cxx.resolved}` ({cxx.version}); "
        f"{fp.cmake or 'no CMake'} for the C++ runtime's runner",
        f"- hypothesis profile `{hypothesis.profile}`: "
        f"{hypothesis.max_examples} examples a cell, derandomize={hypothesis.derandomize}",
        f"- commit {str(fp.commit)[:12]}{' (dirty)' if fp.git.dirty else ''}, "
        f"{fp.time}, {fp.workers} workers"
        f"{f' (CPU threads per runner: {t})' if (t := fp.runner_threads) else ''}, wall time {results.wall_time_s or 0:.0f} s",
        f"- command: `{_shortened(str(fp.command))}`; compile caches: {fp.caches or 'fresh'}",
        f"- {_processes(fp.cells_per_process, fp.confirm)}",
        *_confirmation_lines(results),
    ]
    if fp.autotune_timing:  # recorded since the timing budget; runs before it timed in full
        lines.append(f"- autotuning in the cells: {fp.autotune_timing}")
    for rerun in fp.reruns:
        lines.append(f"- {len(rerun.cells)} cells re-run on commit {str(rerun.commit)[:12]}{f' on an {rerun.gpu}' if rerun.gpu not in (None, fp.gpu.name) else ''}, {rerun.time} "
                     f"(`{_shortened(str(rerun.command))}`), their results replacing the earlier run's: "
                     "results.json's fingerprint lists them under \"reruns\"")
    carried = Counter(c.carried_from for c in results.cells if c.carried_from)
    for source, count in sorted(carried.items()):
        lines.append(f"- {count} cells carried over from {source}, not run again: their digest (sources, harness, versions, "
                     "device, options) is the one recorded there; `--full-run` runs every cell")
    skipped: dict[str, set[str]] = defaultdict(set)
    for cell in results.cells:
        for dtype, reason in cell.dtypes_skipped.items():
            skipped[f"{dtype}: {reason}"].add(cell.case)
    for reason, cases in sorted(skipped.items()):
        lines.append(f"- not tested here, {reason} (cases: {', '.join(sorted(cases))})")
    for problem in results.problems:
        case = f" case `{problem['case']}`:" if problem.get("case") else ""
        lines.append(f"- **left out**, `{problem['module']}`:{case} {markdown.text(problem['message'])}")
    if not results.complete:
        why = f", {results.interrupted}" if results.interrupted else ""
        lines.append(f"- **incomplete run{why}**: these reports hold the {len(results.cells)} cells that ran; "
                     f"{len(results.missing)} collected cells never reported: {', '.join(results.missing[:20])}")
    return lines


COMMAND_SHOWN = 400  # characters; a run given a long --deselect list would bury the report under it


def _shortened(command: str) -> str:
    if len(command) <= COMMAND_SHOWN:
        return command
    return f"{command[:COMMAND_SHOWN]} ... ({len(command)} characters in all, in results.json)"


def _processes(cells_per_process: int | None, confirm: str | None) -> str:
    """How cells shared runner processes: only in a process of its own is a cell's outcome its program's in a new
    interpreter, with nothing an earlier cell's code left in the process (a library's kernel cache, say); a run that
    confirms cells alone (`confirm`, harness.plugin.confirmation) says whether sharing changed any."""
    if cells_per_process == 1:
        return "runner processes: a fresh one for every cell"
    shared = f"up to {cells_per_process} cells" if cells_per_process else "all of a worker's cells (but after a fault)"
    checked = ("; the cells confirmed alone (below) say whether it changed any outcome (--cells-per-process=1: each cell in a new "
               "process)" if confirm else " (run with --cells-per-process=1 for a chart of cells each in a new process)")
    return f"runner processes: {shared} shared one, so what a cell's code left in its process could reach the next{checked}"


# What each --confirm runs again alone (harness.plugin.confirmation).
CONFIRMING = {
    "sample": "every cell that did not pass and one passing cell in ten (by its id's digest) of those that took at most 30 s",
    "tenth": "one cell in ten whatever its outcome (by its id's digest), the default on Triton's CPU interpreter for CI's time",
    "failing": "every cell that did not pass",
    "all": "every cell",
    "none": "no cell",
}


def _confirmation_lines(results: Results) -> list[str]:
    """How many cells ran again alone, in a new process with empty compile caches, and how many agreed with their run in a
    shared process; the cases whose cells differed, each with the cells that did. Nothing for a run that confirmed none
    and did not say it would (runs before confirmation)."""
    policy = results.fingerprint.confirm
    confirmed = [c for c in results.cells if c.confirmation is not None]
    if policy is None and not confirmed:
        return []
    count = Counter(c.confirmation.why for c in confirmed if c.confirmation)
    agreed = sum(1 for c in confirmed if c.confirmation and c.confirmation.agreed is True)
    differed = sorted((c for c in confirmed if c.confirmation and c.confirmation.agreed is False), key=lambda c: c.cell.id)
    parts = ", ".join(f"{n} {why.value}" for why, n in sorted(count.items(), key=lambda item: item[0].value))
    chosen = f"`--confirm={policy}`: {CONFIRMING.get(policy, policy)}" if policy else "by the re-runs that confirmed cells"
    lines = [f"- confirmed alone ({chosen}, each run again in a new runner process with empty compile caches): "
             f"{len(confirmed)} cells{f' ({parts})' if parts else ''}; "
             f"**{agreed} agreed, {len(differed)} differed**"]
    by_case: dict[str, list[CellResult]] = defaultdict(list)
    for cell in differed:
        by_case[cell.case].append(cell)
    for case, cells in sorted(by_case.items()):
        shown = "; ".join(f"`{c.cell.id}` shared {_attempt_text(c.confirmation.shared)}, alone {_attempt_text(c.confirmation.alone)}"
                          for c in cells if c.confirmation)
        lines.append(f"- **case `{case}` depends on what ran before it in its process**: its cells are charted as they ran alone, "
                     f"each in a new process; differed: {shown}")
    return lines


def _attempt_text(attempt: Attempt | None) -> str:
    if attempt is None:
        return "(not run)"
    where = f" @{attempt.stage.value}" if attempt.stage and attempt.outcome is not Outcome.PASS else ""
    error = f" {attempt.error_type}" if attempt.error_type else ""
    return f"`{attempt.outcome.value}{where}{error}`"


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
        *_environment_lines(results),
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


def timing_lines(results: Results) -> list[str]:
    """Where the time went, and what the harness itself cost per cell."""
    timed = timed_cells(results)
    if not timed:
        return []
    f = figures(results, results.wall_time_s or 0.0)
    t = [c.timings for c in timed]
    lines = [
        f"- {f.cells} cells on {f.workers} workers in {f.wall_s:.0f} s; their work {f.work_s:.0f} s in all "
        f"(setup {sum(x.setup for x in t):.0f} s, compile/export/AOT compile {sum(x.compile for x in t):.0f} s, "
        f"run {sum(x.run for x in t):.0f} s), longest cell {f.longest_cell_s:.1f} s; efficiency {f.efficiency:.2f} "
        "(max(longest cell, work / workers) / wall time)",
        f"- harness overhead per cell (wall minus work, runner start included): median {f.overhead_median_s:.2f} s, "
        f"max {f.overhead_worst_s:.2f} s",
    ]
    if f.process_starts:
        lines.append(
            f"- runner processes started: {f.process_starts} (first cell of a worker, or after a crash, timeout or "
            f"poisoned context), median start {f.process_start_median_s:.2f} s"
        )
    if (built := prebuilt_text(f.prebuilt)) is not None:
        lines.append(f"- built for the cells as the run started, in no cell's work: {built}")
    if (timeline := timeline_text(f.timeline)) is not None:
        lines.append(f"- the run's start and end, seconds from its start: {timeline}")
    return lines


def matrix(results: Results) -> str:
    results = judged(results)
    by_row: dict[Row, list[CellResult]] = defaultdict(list)
    for cell in results.cells:
        by_row[cell.row].append(cell)
    by_cell = results.by_cell()
    out = ["# Matrix: every cell", "", *_environment_lines(results), ""]
    out.append(
        "Outcomes: `pass`; `WRONG` (ran, numbers differ from the reference); `fail @stage` (an exception); "
        "`CRASH` (the process died on a signal); `timeout @stage`; `skipped`; `env` (the control fails on "
        "this path too); `error` (the case or harness broke; a cell failing where its control is the harness's error "
        "is the harness's error too, never `env`). Stages: setup, wrap, compile, export, "
        "aot_compile, aot_load, run. *Why*: the known upstream issue or documented limit a failing cell matches "
        f"(link, status, workaround; SUPPORT.md groups them), or *no known issue*. {why.REPRO_HINT}."
    )
    timing = timing_lines(results)
    if timing:
        out += ["", "Timing:", "", *timing]
    for row in Row:
        cells = by_row.get(row)
        if not cells:
            continue
        out += ["", f'<a id="{row.value}"></a>', f"## {row.spec.title}", ""]
        grid: dict[str, dict[Wrapping, str]] = defaultdict(dict)
        for c in cells:
            ratio = speedup(c, by_cell)
            grid[c.case][c.wrapping] = outcome_label(c) + (f", {ratio:.2f}x eager" if ratio is not None else "")
        columns = present(Wrapping, results.cells)
        rows = [[case, *[grid[case].get(w, "") for w in columns]] for case in sorted(grid)]
        out.append(tabulate(rows, headers=["case", *[w.value for w in columns]], tablefmt="github"))
        untested = [c for c in cells if c.outcome is Outcome.SKIPPED]
        details = [c for c in sorted(cells, key=lambda c: c.cell.id) if c.outcome is not Outcome.SKIPPED
                   and (c.outcome is not Outcome.PASS or c.graph_breaks or c.warnings or c.flaky or c.degradations)]
        if details:
            out += ["", tabulate([_detail(c, results.fingerprint) for c in details],
                                 headers=["cell", "outcome", "error (first line)", "smallest failing example", "why"], tablefmt="github")]
        if untested:
            out += ["", tabulate(_untested(untested), headers=["not tested here", "cells", "why"], tablefmt="github")]
    out.append("")
    return "\n".join(out)


def _untested(cells: list[CellResult]) -> list[list[str]]:
    """A row's cells not tested here, a line per reason (most cells first), naming its cells by case and style: on
    Triton's interpreter most of a chart's cells are, and a line each buried the cells that ran."""
    by_reason: dict[str, list[CellResult]] = defaultdict(list)
    for cell in cells:
        by_reason[cell.message or ""].append(cell)
    lines = []
    for reason, same in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0])):
        styles: dict[str, list[str]] = defaultdict(list)
        for cell in sorted(same, key=lambda c: c.cell.id):
            styles[cell.case].append(cell.wrapping.value)
        named = "; ".join(f"`{case}` ({', '.join(wrappings)})" for case, wrappings in styles.items())
        lines.append([f"{len(same)} cell{'s' if len(same) > 1 else ''}", cell_text(named), cell_text(reason)])
    return lines


def _detail(cell: CellResult, fingerprint: Fingerprint) -> list[str]:
    error = cell.message or ""
    if cell.outcome is Outcome.PASS and cell.warnings:
        error = f"warning: {cell.warnings[0]}"
    if cell.outcome is Outcome.PASS and cell.degradations:
        error = "degraded: " + "; ".join(cell.degradations)
    if cell.error_type:
        error = f"{cell.error_type}: {error}"
    if cell.mismatched:
        error += f" ({cell.mismatched})"
    if cell.blamed_on:
        error = f"control {cell.blamed_on} fails too. {error}"
    if cell.flaky:
        error = f"FLAKY, {cell.flaky}. This run: {error}"
    return [f"`{cell.cell.id}`", outcome_label(cell), cell_text(error), cell_text(cell.example or ""),
            cell_text(why.cell_reason(cell, fingerprint))]


def check_writable(directory: str) -> None:
    """OutputNotWritten, before a run writes there, where `directory` is not a folder or one of the reports' files in it
    is not a regular file (a device, a pipe, a link): write() would refuse it only once the cells had run."""
    results_file.refuse_unless_folder(directory)
    results_file.refuse_unless_ours(*(os.path.join(directory, name) for name in REPORT_FILES))


# Every file write() writes or removes, in the order it replaces them.
REPORT_FILES = ("results.json", "MATRIX.md", matrix_picture.FILENAME, "SUPPORT.md")


def write(results: Results, directory: str) -> list[str]:
    """Write the reports (the given results are not changed): results.json, MATRIX.md, SUPPORT.md and, where
    matplotlib can be imported, the matrix's picture that SUPPORT.md shows. They replace the old reports as a set
    (harness.model.results.write_together): a full disk or a report that may not change leaves every old one as it
    was, and raises OutputNotWritten. Where no picture is drawn, one left by an earlier render is removed: it would
    show other results than the reports beside it. Returns the paths written."""
    results = judged(results)
    try:
        png: bytes | None = matrix_picture.draw(results)
    except matrix_picture.Unavailable:
        png = None
    contents: dict[str, str | bytes] = {"results.json": results_file.dumps(results), "MATRIX.md": matrix(results)}
    if png is not None:
        contents[matrix_picture.FILENAME] = png  # before SUPPORT.md, which shows it
    contents["SUPPORT.md"] = support_chart(results, picture_drawn=png is not None)
    return results_file.write_together(directory, contents, remove=() if png is not None else (matrix_picture.FILENAME,))

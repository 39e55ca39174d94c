"""The lines both reports open with: the machine and versions, the run's command and what its confirmation found.

How its cells shared processes, and which ran again alone and what they did there, read off the results file."""

from __future__ import annotations

from collections import Counter, defaultdict

from harness.model.outcome import Attempt, CellResult, Outcome
from harness.model.results import Results
from harness.reporting import markdown


def environment_lines(results: Results) -> list[str]:
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

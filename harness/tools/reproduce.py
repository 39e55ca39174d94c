"""`python -m harness repro`: write a cell's standalone reproducer (harness.execution.reproducer). With
`--check`, write and run the reproducers of every failing cell of a results file and of a sample of its passing
ones, each in a fresh Python process of its own, comparing what each prints with what the chart recorded.

A reproducer that fails at the cell's stage with the cell's error kind reproduces a failing cell; one that passes
reproduces a passing cell. One that passes where the cell failed, or fails where it passed, points at the harness (the
chart's cell would be the harness's artifact: the cell did not have the outcome its program has in a fresh
interpreter), or at a step the reproducer writes out differently: the comparison names each. The cases come from
the results file's own `--cases` unless others are given.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

from tabulate import tabulate

from harness.authoring import registry
from harness.execution import reproducer
from harness.model import results as results_file
from harness.model.cell import Cell
from harness.model.errors import CellIdError, UsageError
from harness.model.fingerprint import INTERPRETER, Fingerprint
from harness.model.known_issues import EXPLAINED
from harness.model.outcome import CellResult, Outcome
from harness.model.results import Results
from harness.reporting import markdown
from harness.reporting.markdown import cell_text


def _recorded(result: CellResult | None, limit: int = 200) -> str:
    """What the run recorded for a cell, its message cut after a whole word to `limit` characters."""
    if result is None:
        return "no result recorded (the reproducer runs the path on the example it traces with)"
    text = result.outcome.value + (f" @{result.stage.value}" if result.stage else "")
    if result.error_type or result.message:
        text += f" ({markdown.shortened((result.error_type + ': ' if result.error_type else '') + (result.message or ''), limit)})"
    return text


def _environment(fingerprint: Fingerprint | None) -> str:
    if fingerprint is None:
        return "no recorded run"
    device = fingerprint.gpu.name if fingerprint.gpu.available and fingerprint.gpu.name else "Triton's CPU interpreter"
    return f"torch {fingerprint.torch}, triton {fingerprint.triton}, {device}"


def case_specs(results: Results | None, given: list[str] | None) -> list[str]:
    """The case modules a reproducer loads its case from: those given, else the run's own (its --cases), else the
    built-in cases."""
    return given or (results.fingerprint.case_specs() if results is not None else []) or [registry.BUILTIN]


def source(cell_id: str, results: Results | None, specs: list[str] | None, device: str | None = None) -> str:
    """The reproducer of one cell: its case loaded from `specs` (case modules, as --cases takes them; None: the run's
    own, case_specs), its example and recorded error from `results` where given."""
    specs = case_specs(results, specs)
    try:
        cell = Cell.parse(cell_id)
    except CellIdError as exc:
        raise UsageError(f"{cell_id!r} is not a cell id (case-style-row, e.g. add-raw-export_nonstrict): {exc}") from None
    loaded = _loaded(tuple(specs))
    case = loaded.cases.get(cell.case)
    if case is None:
        problems = "; ".join(str(p) for p in loaded.problems if p.case in (None, cell.case))
        raise UsageError(f"no case {cell.case!r} in {', '.join(specs)}" + (f" ({problems})" if problems else "")
                         + ": name its module with --cases")
    result = results.by_cell().get(cell) if results is not None else None
    fingerprint = results.fingerprint if results is not None else None
    interpreter = fingerprint.mode == INTERPRETER if fingerprint is not None else os.environ.get("TRITON_INTERPRET") == "1"
    if device is None:
        device = "cpu" if interpreter else "cuda"
    return reproducer.write(cell, case, result.example if result else None, _recorded(result), _environment(fingerprint), device,
                            interpreter, ran=result.ran if result else ())


@functools.lru_cache(maxsize=None)
def _loaded(specs: tuple[str, ...]) -> registry.Loaded:
    """The cases of `specs`, loaded (and checked) once for all the reproducers a check writes."""
    registry.importable(os.getcwd())
    return registry.load(list(specs))


@dataclass
class Checked:
    cell: CellResult
    path: str
    verdict: reproducer.Reproduced | None
    seconds: float
    tail: str

    @property
    def agreement(self) -> str:
        """How the reproducer's outcome compares with the cell's."""
        got, cell = self.verdict, self.cell
        if got is None:
            return "no verdict (the script died or hung: see its log)"
        if cell.outcome is Outcome.PASS:
            if got.verdict == "PASSED":
                return "reproduced"
            return f"{got.verdict} where the cell passed: the harness's artifact (the chart hides a failure), or a step the reproducer adds"
        if got.verdict == "PASSED":
            return "PASSED where the cell failed: the harness's artifact, or a step the reproducer leaves out"
        expected_verdict = "WRONG" if cell.outcome is Outcome.WRONG else "FAILED"
        if got.verdict != expected_verdict or got.stage != (cell.stage.value if cell.stage else None):
            return f"differs: {got.verdict} @{got.stage}"
        if cell.outcome is Outcome.FAIL and cell.error_type and not cell.error_type.startswith("harness.") and got.error_type != cell.error_type:
            return f"differs: {got.error_type}"
        return "reproduced"


_running: set[subprocess.Popen[str]] = set()  # the reproducers running now: killed when the check is interrupted


def _run_one(result: CellResult, path: str, timeout: float) -> Checked:
    """One reproducer in a fresh Python process, on Inductor caches of its own, empty, as its cell compiled on (the
    graph observer keeps each cell's apart): a graph another reproducer cached is never served to it. Triton's compiled
    kernels and Inductor's precompiled headers are shared by the check's reproducers, as by the cells of a run (the same
    source compiles to the same binary)."""
    started = time.perf_counter()
    out = os.path.dirname(path)
    caches = tempfile.mkdtemp(prefix="inductor-", dir=out)
    # Inductor's precompiled C++ headers are the check's, as a run's cells share the run's: the same headers compile the same.
    os.makedirs(os.path.join(out, "precompiled_headers"), exist_ok=True)
    os.symlink(os.path.join(out, "precompiled_headers"), os.path.join(caches, "precompiled_headers"))
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": caches, "TRITON_CACHE_DIR": os.path.join(out, "triton-cache")}
    process = subprocess.Popen([sys.executable, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               cwd=os.path.dirname(path), start_new_session=True)  # an interrupt of the check reaches it from here only
    _running.add(process)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output = (process.communicate()[0] or "") + f"\ntimed out after {timeout:.0f} s"
    finally:
        _running.discard(process)
        shutil.rmtree(caches, ignore_errors=True)  # a C++ build's precompiled headers are large
    with open(path[:-3] + ".log", "w") as f:
        f.write(output)
    return Checked(result, path, reproducer.outcome_of(output), time.perf_counter() - started, output[-2000:])


ALL = -1  # `--passing all`: every passing cell


def passing_sample(cells: list[CellResult], count: int) -> list[CellResult]:
    """`count` passing cells (ALL: every one), spread over the rows and, within a row, over its styles and cases: taken
    a row at a time in turn, each row's cells in the order of their ids, so that the same file gives the same sample."""
    by_row: dict[str, list[CellResult]] = {}
    for result in sorted((c for c in cells if c.outcome is Outcome.PASS), key=lambda c: (c.cell.row.value, c.cell.wrapping.value, c.cell.id)):
        by_row.setdefault(result.cell.row.value, []).append(result)
    for row, results in by_row.items():  # a row's styles interleaved, so that a short sample of a row spans them
        styles: dict[str, list[CellResult]] = {}
        for result in results:
            styles.setdefault(result.cell.wrapping.value, []).append(result)
        by_row[row] = [c for group in itertools.zip_longest(*styles.values()) for c in group if c is not None]
    taken = [c for group in itertools.zip_longest(*by_row.values()) for c in group if c is not None]
    return taken if count == ALL else taken[:count]


def check(results_path: str, out: str, specs: list[str] | None, jobs: int, timeout: float, match: str | None, passing: int = 0) -> int:
    """Write and run the reproducer of every failing cell of `results_path` and of `passing` of its passing cells
    (passing_sample; ALL: every one), those whose id contains `match`, `jobs` at a time; write out/REPRO.md. Exit 0
    when every one agreed with its cell, 1 otherwise."""
    results = results_file.load(results_path)
    chosen = [c for c in results.cells if match is None or re.search(match, c.cell.id)]
    failing = [c for c in chosen if c.outcome in EXPLAINED]
    sampled = passing_sample(chosen, passing)
    os.makedirs(out, exist_ok=True)
    paths = []
    for result in failing + sampled:
        path = os.path.join(os.path.abspath(out), f"repro_{result.cell.id.replace('-', '_')}.py")
        with open(path, "w") as f:
            f.write(source(result.cell.id, results, specs))
        paths.append(path)
    def written_up(checked: list[Checked], wall: float) -> list[str]:
        lines = _write_up(results_path, results, sorted(checked, key=lambda c: c.cell.cell.id), len(failing), len(sampled), jobs, wall)
        results_file.write_atomic(os.path.join(out, "REPRO.md"), "\n".join(lines))
        return lines

    checked, wall = _run_all(list(zip(failing + sampled, paths)), jobs, timeout, written_up)
    print("\n".join(written_up(checked, wall)[:5]))
    return 0 if all(c.agreement == "reproduced" for c in checked) else 1


def _run_all(work: list[tuple[CellResult, str]], jobs: int, timeout: float,
             written_up: Callable[[list[Checked], float], Any]) -> tuple[list[Checked], float]:
    """Each reproducer run, `jobs` at a time, the write-up brought up to date as each ends (a check killed outright
    leaves the reproducers that ran written up); those that finished, with the wall time, when interrupted."""
    started = time.perf_counter()
    checked: list[Checked] = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = [pool.submit(_run_one, result, path, timeout) for result, path in work]
        for future in concurrent.futures.as_completed(futures):
            checked.append(future.result())
            written_up(checked, time.perf_counter() - started)
    except KeyboardInterrupt:  # interrupted (timeout -s INT): the reproducers that finished are still written up
        print(f"interrupted: {len(checked)} of {len(work)} reproducers ran", file=sys.stderr)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        for process in list(_running):  # the pool's threads end with them: the interpreter exits at once
            process.kill()
    checked.sort(key=lambda c: c.cell.cell.id)
    return checked, time.perf_counter() - started


def _write_up(results_path: str, results: Results, checked: list[Checked], failing: int, sampled: int, jobs: int,
              wall: float) -> list[str]:
    """REPRO.md's lines: what was checked, how each agreed, and each cell's recorded outcome beside its reproducer's."""
    counts: dict[str, int] = {}
    for c in checked:
        key = c.agreement.split(":")[0]
        counts[key] = counts.get(key, 0) + 1
    checked_failing = sum(1 for c in checked if c.cell.outcome is not Outcome.PASS)
    return [
        f"# Reproducers of the cells of `{results_path}`",
        "",
        f"- recorded on {_environment(results.fingerprint)}; reproducers run on torch "
        f"{_version('torch')}, triton {_version('triton')}, {jobs} at a time, {wall:.0f} s",
        f"- {checked_failing} of {failing} failing cells and {len(checked) - checked_failing} of {sampled} passing cells (a sample "
        "spread over the rows) checked: " + (", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"),
        "",
        "Each reproducer (`repro_<cell>.py`, its output in `.log` beside it) imports only torch, triton and the case's "
        "module, and runs in a fresh Python process on empty Inductor caches of its own. *reproduced*: it failed at the "
        "cell's stage with the cell's error kind, was WRONG where the cell was, or passed where the cell passed.",
        "",
        tabulate([[f"`{c.cell.cell.id}`", cell_text(_recorded(c.cell, 130)),
                   cell_text(markdown.shortened(f"{c.verdict.verdict} @{c.verdict.stage}: {c.verdict.error_type or ''} {c.verdict.message}", 160)
                             if c.verdict else ""),
                   c.agreement, f"{c.seconds:.1f}"] for c in checked],
                 headers=["cell", "recorded", "reproducer", "agreement", "s"], tablefmt="github"),
        "",
    ]


def _version(module: str) -> str:
    return str(getattr(sys.modules.get(module) or __import__(module), "__version__", "?"))

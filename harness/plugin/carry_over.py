"""Re-running only what changed: with --baseline, a cell whose digest is unchanged is carried over, not run.

Its result is then the baseline's, marked with the run that measured it (`CellResult.carried_from`). A cell's digest
holds everything its outcome depends on that a run can know before running it: its id and time limit; its case's source
and the modules it reaches (harness.authoring.sources), with the environment variables those read by name; the
harness's own code; the versions of torch, Triton, CUDA, Python and hypothesis; the GPU, its driver and count, or the
interpreter; the C++ compiler and CMake; the examples profile, cells per process, how autotuners time, the caches
(fresh or reused); --perf and --profile-dir; the environment variables torch, Triton, CUDA and the compilers read. The
controller decides once, before the workers start, and tells them which cells to carry; every run records each cell's
digest, so that any run can be a later one's baseline. `--full-run` carries nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any

from harness.authoring import registry, sources
from harness.model import results as results_file
from harness.model.cell import Cell
from harness.model.fingerprint import Fingerprint
from harness.model.outcome import WORKER_DIED, CellResult, Fault, Outcome
from harness.model.results import Results
from harness.model.rows import parse_timeouts, timeout_for

# The environment variables a cell's code, or the compilers it starts, read: a change to one re-runs every cell.
READ_VARIABLES = ("TORCH", "PYTORCH", "TRITON", "INDUCTOR", "CUDA", "NVIDIA", "CXX", "CC", "CFLAGS", "CXXFLAGS", "LDFLAGS",
                  "LD_LIBRARY_PATH", "OMP_", "MKL_")


def environment(fingerprint: Fingerprint) -> dict[str, Any]:
    """What of a run's fingerprint a cell's outcome may depend on: not its time, command, commit or worker count
    (the sources stand for the commit; a worker count changes what runs beside a cell, not what it checks)."""
    gpu = fingerprint.gpu
    return {
        "mode": fingerprint.mode, "torch": fingerprint.torch, "triton": fingerprint.triton, "cuda": fingerprint.cuda,
        "gpu": [gpu.available, gpu.name, gpu.count, gpu.driver, gpu.capability], "python": fingerprint.python,
        "platform": fingerprint.platform, "compiler": fingerprint.recorded("compiler"), "cmake": fingerprint.cmake,
        "hypothesis": fingerprint.recorded("hypothesis"), "cells_per_process": fingerprint.cells_per_process,
        "autotune_timing": fingerprint.autotune_timing, "caches": fingerprint.caches,
    }


def read_variables(env: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in sorted(env.items()) if name.startswith(READ_VARIABLES)}


@dataclasses.dataclass
class Digests:
    """Each cell's digest in one run: what it shares with every cell, its case's sources, its time limit."""

    shared: str
    cases: dict[str, str]
    timeouts: dict[str, float]

    @classmethod
    def of_run(cls, fingerprint: Fingerprint, cases: dict[str, Any], options: dict[str, Any], env: dict[str, str]) -> Digests:
        """`options`: the run's options a cell's outcome depends on beyond its fingerprint (--perf, --profile-dir)."""
        shared = {"environment": environment(fingerprint), "harness": sources.harness_digest(), "options": options,
                  "variables": read_variables(env)}
        return cls(shared=_sha(shared), cases=sources.case_digests(cases.values(), registry.module_of, env),
                   timeouts=parse_timeouts(options.get("cell_timeout") or []))

    def of(self, cell: Cell) -> str | None:
        """The cell's digest; None for a cell of a case this run did not load."""
        case = self.cases.get(cell.case)
        if case is None:
            return None
        return _sha([self.shared, case, cell.id, timeout_for(cell.row, self.timeouts)])


def _sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def source_run(baseline: Results, path: str) -> str:
    """How a carried cell names the run it comes from: that run's time and commit, and the baseline file."""
    fingerprint = baseline.fingerprint
    commit = f" at commit {fingerprint.commit[:12]}" if fingerprint.commit else ""
    return f"the run of {fingerprint.time or 'an unrecorded time'}{commit} ({os.path.basename(path)})"


def carried(baseline: Results, digests: Digests, cells: list[Cell]) -> set[Cell]:
    """The cells of `cells` whose digest is the one `baseline` recorded for them, and whose outcome says something of
    the cell alone (`carriable`)."""
    before = baseline.by_cell()
    return {cell for cell in cells if (old := before.get(cell)) is not None and carriable(old) and old.digest == digests.of(cell)}


def carriable(old: CellResult) -> bool:
    """May this recorded result stand for a run of the same inputs? Not without a digest (recorded before digests were),
    not a timeout (a loaded machine's as much as the cell's), not the harness's own error or a pytest worker that died
    (the harness's fault, not a finding)."""
    if old.digest is None or old.outcome is Outcome.TIMEOUT:
        return False
    if old.outcome is Outcome.ERROR and old.fault is Fault.HARNESS:
        return False
    return not (old.outcome is Outcome.CRASH and (old.message or "").startswith(WORKER_DIED))


def carry(old: CellResult, baseline_run: str) -> CellResult:
    """A carried cell's result: the baseline's, marked with the run that measured it (`source_run`; kept where the
    baseline carried it itself)."""
    return dataclasses.replace(old, carried_from=old.carried_from or baseline_run)


def against_baseline(results: Results, path: str | None, accept: bool) -> list[str]:
    """What a run says of its --baseline (`path`): which of the baseline's cells did not run; with --accept (`accept`), the
    baseline rewritten with this run's outcomes, keeping its flaky marks and the outcomes of the cells this run did not run."""
    if path is None:
        return []
    old = results_file.load(path) if os.path.exists(path) else None
    notes = []
    if old is not None:
        absent = sorted(cell.id for cell in set(old.by_cell()) - {c.cell for c in results.cells})
        if absent:
            notes.append(f"{len(absent)} baseline cells did not run: {', '.join(absent[:10])}{f', and {len(absent) - 10} more' if len(absent) > 10 else ''}")
    if accept:
        flaky = {c.cell: c.flaky for c in old.cells if c.flaky} if old else {}
        for cell in results.cells:
            cell.flaky = flaky.get(cell.cell)
        accepted = results
        if old is not None:
            # The accept command repeats the run's options, -k and --shard among them: the baseline's cells
            # this run did not run keep their outcomes, and the cells it ran take this run's.
            kept = {c.cell: c for c in old.cells}
            kept.update({c.cell: c for c in results.cells})
            accepted = dataclasses.replace(results, cells=list(kept.values()), complete=old.complete and results.complete,
                                           missing=sorted(set(old.missing) - {c.cell.id for c in results.cells}))
        results_file.save(accepted, path)
        notes.append(f"accepted this run's outcomes of {len(results.cells)} cells into the baseline {path} "
                     f"({len(accepted.cells)} cells)")
    return notes

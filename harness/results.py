"""The machine-readable results file: versioned, validated on read, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from harness.cell import Cell
from harness.errors import CellIdError, ResultsError
from harness.outcome import CellResult

SCHEMA = "triton-compat-matrix/results"
VERSION = 2
READABLE = (1, 2)  # version 1 differs only in the names of the timings, which load() renames


@dataclass
class Results:
    fingerprint: dict[str, Any]
    cells: list[CellResult]
    complete: bool = True
    missing: list[str] = field(default_factory=list)  # collected cells that never reported
    wall_time_s: float | None = None
    # Case modules and cases left out, each {"module", "case", "message"} (harness.registry.CaseProblem).
    problems: list[dict[str, Any]] = field(default_factory=list)
    interrupted: str | None = None  # why the run stopped before every cell ran (Ctrl-C, SIGTERM)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "missing": self.missing,
            "wall_time_s": self.wall_time_s,
            "problems": self.problems,
            "fingerprint": self.fingerprint,
            "cells": [c.to_json() for c in sorted(self.cells, key=lambda c: c.cell.id)],
        }

    def by_cell(self) -> dict[Cell, CellResult]:
        return {c.cell: c for c in self.cells}


def write_atomic(path: str, content: str | bytes) -> None:
    """Readers see the old file or the new one, never half of one. Text is written as text, bytes as they are."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def dumps(results: Results) -> str:
    return json.dumps(results.to_json(), indent=1, sort_keys=False) + "\n"


def save(results: Results, path: str) -> None:
    write_atomic(path, dumps(results))


def load(path: str) -> Results:
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not JSON (truncated or corrupt?): {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not a triton-compat-matrix results file (no \"schema\": \"{SCHEMA}\")")
    if data.get("version") not in READABLE:
        readable = " and ".join(str(v) for v in READABLE)
        raise ResultsError(f"{path}: results schema version {data.get('version')!r}; this harness reads versions {readable}")
    try:
        cells = [CellResult.from_json(c) for c in data["cells"]]
        return Results(
            fingerprint=data["fingerprint"],
            cells=cells,
            complete=data["complete"],
            missing=data["missing"],
            wall_time_s=data.get("wall_time_s"),
            problems=data.get("problems", []),
            interrupted=data.get("interrupted"),
        )
    except CellIdError as exc:
        raise ResultsError(f"{path}: unknown cell id: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsError(f"{path}: malformed results: {type(exc).__name__}: {exc}") from None

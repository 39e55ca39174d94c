"""The machine-readable results file: versioned, validated on read, written atomically. Split runs of one
environment merged."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Any

from harness.model import jsontext
from harness.model.cell import Cell
from harness.model.errors import CellIdError, OutputNotWritten, ResultsError
from harness.model.fingerprint import Fingerprint, Rerun, ShardsMerged
from harness.model.outcome import CellResult

SCHEMA = "triton-compat-matrix/results"
VERSION = 5
# Version 1 differs in the names of the timings, which load() renames; versions 1 and 2 record the harness's own
# exceptions by module path (harness.cpp_runtime.RuntimeFailure), which load() reads as the kind version 3
# records (harness.RuntimeFailure), so a module's move changes no recorded data and old and new runs compare.
# Versions 1 to 3 may hold bare NaN and Infinity (Python's json wrote them; other parsers refuse them);
# version 4 is strict JSON, a non-finite number written as its name ("NaN", "Infinity", harness.model.jsontext).
# Version 5 adds each failing cell's known issue ("known_issue", harness.model.known_issues); older files have none
# recorded, and the reports match their cells when they are read.
READABLE = (1, 2, 3, 4, 5)
_HARNESS_MODULE_PATH = re.compile(r"^harness\.(?:[a-z_]\w*\.)+([A-Z]\w*)$")


def stable_error_kind(error_type: str | None) -> str | None:
    """`harness.<Class>` for a harness exception recorded by its module path; any other error kind as it is."""
    return _HARNESS_MODULE_PATH.sub(r"harness.\1", error_type) if error_type else error_type


@dataclass
class Results:
    fingerprint: Fingerprint
    cells: list[CellResult]
    complete: bool = True
    missing: list[str] = field(default_factory=list)  # collected cells that never reported
    wall_time_s: float | None = None
    # Case modules and cases left out, each {"module", "case", "message"} (harness.authoring.registry.CaseProblem).
    problems: list[dict[str, Any]] = field(default_factory=list)
    interrupted: str | None = None  # why the run stopped before every cell ran (Ctrl-C, SIGTERM)
    # What the run built for its cells before they asked (harness.execution.prebuild), each {"build", "seconds", "cpu_s",
    # "error"}: not a cell's work, so not in any cell's timings. Absent from files written before it was built.
    prebuilt: list[dict[str, Any]] = field(default_factory=list)
    # Where the run's start went (harness.plugin.controller): "started", the controller's start as a Unix time (the
    # cells' `finished` are too), and seconds from it to "first_configured" and "last_configured" (xdist sets its
    # workers up one after another) and to "first_collected" and "last_collected" (their collections done). Absent
    # from files written before.
    timeline: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "missing": self.missing,
            "wall_time_s": self.wall_time_s,
            "problems": self.problems,
            "prebuilt": self.prebuilt,
            "timeline": self.timeline,
            "fingerprint": self.fingerprint.to_json(),
            "cells": [c.to_json() for c in sorted(self.cells, key=lambda c: c.cell.id)],
        }

    def by_cell(self) -> dict[Cell, CellResult]:
        return {c.cell: c for c in self.cells}


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


def standing(path: str) -> str | None:
    """What stands at `path` where it is neither nothing nor a regular file ("a character device", "a symbolic link",
    ...): what a report or a tool's output may not replace. None where the path is free or a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (a folder above it missing, or a file): the write says
        return None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def refuse_unless_ours(*paths: str) -> None:
    """OutputNotWritten, naming it, where something other than a regular file stands at one of `paths`: the harness
    writes its files only where a file of its own, or nothing, is (replaced, /dev/full would become a regular file)."""
    for path in paths:
        kind = standing(path)
        if kind is not None:
            raise OutputNotWritten(f"{path} is {kind}, not a regular file: nothing was written there; give a file's path")


def refuse_unless_folder(directory: str) -> None:
    """OutputNotWritten where `directory` exists and is not a folder."""
    if os.path.lexists(directory) and not os.path.isdir(directory):
        kind = standing(directory) or "a file"
        raise OutputNotWritten(f"{directory} is {kind}, not a folder: nothing was written there; give a folder's path")


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def write_atomic(path: str, content: str | bytes) -> None:
    """Readers see the old file or the new one, never half of one. Text is written as text, bytes as they are.
    The file gets the mode any file the process creates gets (0644 under the usual umask 022), not
    mkstemp's 0600: reports are shared CI artifacts, read by other users. Only where a regular file or nothing
    stands (refuse_unless_ours)."""
    directory = os.path.dirname(os.path.abspath(path))
    refuse_unless_ours(path)
    os.makedirs(directory, exist_ok=True)
    tmp = _staged(directory, os.path.basename(path), content)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_together(directory: str, contents: dict[str, str | bytes], remove: tuple[str, ...] = ()) -> list[str]:
    """Replace a set of files in `directory` as one: every new file is written beside its target first (a full disk
    stops it there), each old one is kept under a second name (a file that cannot be replaced, such as an immutable
    one, stops it there), and only then are they replaced; a failure on the way puts every old file back and
    raises OutputNotWritten. `remove`: files that must not outlive the set (removed last). Only where a regular file or
    nothing stands (refuse_unless_ours): else nothing is written. Returns the paths."""
    try:
        refuse_unless_folder(directory)
        refuse_unless_ours(*(os.path.join(directory, name) for name in (*contents, *remove)))
    except OutputNotWritten as exc:
        raise OutputNotWritten(f"the reports in {directory} were not replaced, and are as they were: {exc}") from None
    staged: dict[str, str] = {}
    kept: dict[str, str] = {}
    replaced: list[str] = []
    try:
        os.makedirs(directory, exist_ok=True)
        for name, content in contents.items():
            staged[name] = _staged(directory, name, content)
        for name in (*contents, *remove):
            target = os.path.join(directory, name)
            if os.path.lexists(target):
                kept[name] = os.path.join(directory, f".old-{os.getpid()}-{name}")
                _keep(target, kept[name])
        for name, path in staged.items():
            os.replace(path, os.path.join(directory, name))
            replaced.append(name)
        for name in remove:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, name))
    except BaseException as exc:  # an interruption too puts the old set back
        _put_back(directory, replaced, kept)
        if isinstance(exc, OSError):
            raise OutputNotWritten(f"the reports in {directory} were not replaced, and are as they were: {exc}") from None
        raise
    finally:
        for path in (*staged.values(), *kept.values()):
            with contextlib.suppress(OSError):
                os.remove(path)
    return [os.path.join(directory, name) for name in contents]


def _staged(directory: str, name: str, content: str | bytes) -> str:
    """`content` in a new file beside `name`, with the mode write_atomic gives."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=name)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _keep(target: str, kept: str) -> None:
    """The old file under a second name: a hard link (no copy, no space), or, on a file system without them, a copy.
    A file that may not change is then refused by its replacement, and put back like the rest."""
    try:
        os.link(target, kept)
    except OSError:
        shutil.copy2(target, kept)


def _put_back(directory: str, replaced: list[str], kept: dict[str, str]) -> None:
    """Undo write_together's replacements: each old file back, a new file that had none before removed."""
    for name in replaced:
        target = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            if name in kept:
                os.replace(kept.pop(name), target)
            else:
                os.remove(target)


def dumps(results: Results) -> str:
    """Compact JSON with one cell a line: a chart of thousands of cells stays small enough to travel with the checkout,
    and a diff of two versions of the file shows the cells that changed, a line each."""
    data = results.to_json()
    cells = data.pop("cells")
    head = jsontext.dumps(data, separators=(",", ":"))[:-1]  # the fields before the cells, their closing brace left off
    rows = ",\n".join(jsontext.dumps(cell, separators=(",", ":")) for cell in cells)
    return f'{head},"cells":[\n{rows}\n]}}\n' if cells else f'{head},"cells":[]}}\n'


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
        readable = ", ".join(str(v) for v in READABLE)
        raise ResultsError(f"{path}: results schema version {data.get('version')!r}; this harness reads versions {readable}")
    try:
        cells = [CellResult.from_json({**c, "error_type": stable_error_kind(c.get("error_type"))}) for c in data["cells"]]
        return Results(
            fingerprint=Fingerprint.from_json(data["fingerprint"]),
            cells=cells,
            complete=data["complete"],
            missing=data["missing"],
            wall_time_s=data.get("wall_time_s"),
            problems=data.get("problems", []),
            interrupted=data.get("interrupted"),
            prebuilt=data.get("prebuilt", []),
            timeline=data.get("timeline", {}),
        )
    except CellIdError as exc:
        raise ResultsError(f"{path}: unknown cell id: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a field of the wrong type (null where an object is)
        raise ResultsError(f"{path}: malformed results: {type(exc).__name__}: {exc}") from None


def merge(runs: list[tuple[str, Results]], rerun: bool = False) -> Results:
    """Runs of one environment (split with `-k`, or across machines) as one run, in the order given. Raises
    ResultsError naming a file that measured another environment or repeats an earlier file's cells.

    With `rerun`, each later file is a re-run of some of the cells before it (`--lf`, `-k`, cells a change can
    move): its results replace the earlier ones, and the merged fingerprint's "reruns" names, for each re-run,
    its file, commit, time, command and the cells it replaced, so the chart says which cells came from which run."""
    (first_path, first), *rest = runs
    cells = {c.cell.id: c for c in first.cells}
    missing = set(first.missing)
    reruns = list(first.fingerprint.reruns)
    for path, run in rest:
        differs = run.fingerprint.same_environment(first.fingerprint)
        if differs:
            raise ResultsError(
                f"{path}: measured a different environment than {first_path} ({differs}: "
                f"{run.fingerprint.recorded(differs)!r} vs {first.fingerprint.recorded(differs)!r}); charts of different environments do not merge"
            )
        duplicated = sorted(set(cells) & {c.cell.id for c in run.cells})
        if duplicated and not rerun:
            raise ResultsError(f"{path}: cells already in an earlier file: {', '.join(duplicated[:10])} "
                               "(to fold a re-run of these cells over that file, give --rerun)")
        if rerun:
            reruns += run.fingerprint.reruns
            reruns.append(_rerun_record(path, run))
        cells.update({c.cell.id: c for c in run.cells})
        missing |= set(run.missing)
    missing -= set(cells)
    wall = [r.wall_time_s for _, r in (runs[:1] if rerun else runs) if r.wall_time_s is not None]
    fingerprint = dataclasses.replace(first.fingerprint, reruns=reruns)
    if rest and not rerun:
        fingerprint.command = " ; ".join(r.fingerprint.command or "?" for _, r in runs)
    # A file re-rendered alone keeps its words: rendering is idempotent. What an earlier merge said of absent
    # --shard parts is said again below, from the parts held now.
    said = [(path, _ABSENT_PARTS.sub("", r.interrupted).strip("; ")) for path, r in runs if r.interrupted]
    stopped = "; ".join(f"{path}: {words}" if rest else words for path, words in said if words) or None
    parts_absent = _shards_absent(runs, fingerprint)
    if parts_absent:
        stopped = "; ".join(filter(None, [stopped, parts_absent]))
    return Results(fingerprint=fingerprint, cells=list(cells.values()), complete=not missing and not parts_absent,
                   missing=sorted(missing), wall_time_s=sum(wall) if wall else None,
                   interrupted=stopped if missing or parts_absent else None,
                   prebuilt=[p for _, r in (runs[:1] if rerun else runs) for p in r.prebuilt],
                   timeline=first.timeline if len(runs) == 1 else {})  # one run's start; merged runs had several


def _rerun_record(path: str, run: Results) -> Rerun:
    fp = run.fingerprint
    return Rerun(file=path, commit=fp.commit, time=fp.time, command=fp.command, complete=run.complete, gpu=fp.gpu.name,
                 cells=sorted(c.cell.id for c in run.cells))


_ABSENT_PARTS = re.compile(r"parts [0-9/, ]+ of the --shard split not merged: their cells are not in this chart")


def _parts_held(run: Results) -> tuple[tuple[Any, ...], list[int]] | None:
    """The --shard parts a results file holds (a part's own record, or what an earlier merge recorded), with
    what makes a split: the number of parts, the timings that balanced them, and the harness's commit."""
    part, merged, commit = run.fingerprint.shard, run.fingerprint.shards, run.fingerprint.commit
    if part is not None:
        return (part.count, part.timings_sha256, commit), [part.index]
    if merged is not None:
        return (merged.count, merged.timings_sha256, commit), list(merged.merged)
    return None


def _shards_absent(runs: list[tuple[str, Results]], fingerprint: Fingerprint) -> str | None:
    """Parts of a run split with --shard=K/N: the merged fingerprint records which parts it holds, and what is
    absent is said, since a part's cells never collected here cannot be listed as missing. Parts of another
    split (another N, other --shard-timings, another commit's cost estimate), whose parts need not add up to
    every cell, are refused."""
    parts = [(path, held) for path, r in runs if (held := _parts_held(r)) is not None]
    if not parts:
        return None
    first_path, (split, _) = parts[0]
    count, timings, commit = split
    held: list[int] = []
    for path, (other, indices) in parts:
        if other[0] != count:
            raise ResultsError(f"{path}: a part of {other[0]} parts, merged with parts of {count} ({first_path}): "
                               "give the parts of one split")
        if other != split:
            raise ResultsError(f"{path}: a part of another split than {first_path}'s (balanced by other --shard-timings, "
                               "or made by another commit): its parts and theirs need not add up to every cell; "
                               "give the parts of one split")
        held += indices
    fingerprint.shard = None
    fingerprint.shards = ShardsMerged(count=count, merged=sorted(held), timings_sha256=timings)
    absent = [f"{k}/{count}" for k in range(1, count + 1) if k not in held]
    return f"parts {', '.join(absent)} of the --shard split not merged: their cells are not in this chart" if absent else None

"""`python -m harness profile DIR`: where the cells of a `--profile-dir DIR` run spent their time.

Each file is one cell's samples in one process (harness.processes.profiling): its seconds split into the parts
of PyTorch, Triton and the harness, without overlap. The tables sum them by part and by row; a process the runner
waited for (the warm-cache row's new process) has rows of its own, and its time is also inside the runner's
"waiting for a helper process". Then the innermost functions that held the most time, over every cell.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

from harness.model.cell import Cell

TOP_FUNCTIONS = 30


def summarize(directory: str) -> str:
    seconds: dict[str, float] = defaultdict(float)
    cells: dict[str, set[str]] = defaultdict(set)
    parts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    leaves: dict[str, float] = defaultdict(float)
    files = 0
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(directory, name)) as f:
            record = json.load(f)
        files += 1
        try:
            row = Cell.parse(record["cell"]).row.value
        except Exception:  # noqa: BLE001 - samples of no cell of the matrix are counted apart
            row = "(no cell)"
        if record.get("role", "runner") != "runner":  # a process the cell's runner waited for: its time is inside the runner's
            row = f"{row} ({record['role']})"
        cells[row].add(record["cell"])
        seconds[row] += record["seconds"]
        for part, spent in record["parts"].items():
            parts[row][part] += spent
        for leaf, spent in record["leaves"].items():
            leaves[leaf] += spent
    if not files:
        return f"no profile samples in {directory} (run the matrix with --profile-dir {directory})\n"
    return _tables(seconds, cells, parts, leaves, files)


def _tables(seconds: dict[str, float], cells: dict[str, set[str]], parts: dict[str, dict[str, float]],
            leaves: dict[str, float], files: int) -> str:
    order = sorted(seconds, key=lambda r: -seconds[r])
    totals: dict[str, float] = defaultdict(float)
    for r in order:
        if r.endswith(")"):
            continue
        for part, spent in parts[r].items():
            totals[part] += spent
    labels = sorted(totals, key=lambda p: -totals[p])
    whole = sum(s for r, s in seconds.items() if not r.endswith(")"))  # the runners' time: a helper's is inside it
    lines = [f"{sum(len(c) for c in cells.values())} cells, {files} sampled processes' cells, {whole:.0f} s sampled "
             "in the runners (wall time of each process's main thread)", "",
             "Where the time went, by part (each sample counted once, in the first part of "
             "harness.processes.profiling.PARTS on its stack):", "",
             "| part | seconds | share |", "| --- | ---: | ---: |"]
    lines += [f"| {p} | {totals[p]:.0f} | {totals[p] / whole:.1%} |" for p in labels]
    lines += ["", "By row (seconds):", "",
              "| row | cells | sampled | " + " | ".join(labels) + " |",
              "| --- | ---: | ---: | " + " | ".join("---:" for _ in labels) + " |"]
    for r in order:
        lines.append(f"| {r} | {len(cells[r])} | {seconds[r]:.0f} | " + " | ".join(f"{parts[r].get(p, 0.0):.0f}" for p in labels) + " |")
    lines += ["", f"The {TOP_FUNCTIONS} innermost functions that held the most time, over every cell:", "",
              "| seconds | share | function |", "| ---: | ---: | --- |"]
    for leaf, spent in sorted(leaves.items(), key=lambda kv: -kv[1])[:TOP_FUNCTIONS]:
        lines.append(f"| {spent:.0f} | {spent / whole:.1%} | `{leaf}` |")
    return "\n".join(lines) + "\n"

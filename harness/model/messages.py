"""What a worker's runner (harness.processes.runner) and its child process send each other: one line of JSON a message.

The parent sends a CellRequest for each cell; the child answers with Events: `ready` once it can take cells, `stage`
before each stage it enters, `result` when the cell is done, then `healthy` or `unhealthy` after it checked the GPU.
`eof` (the child closed its end: it died) and `timeout` (no event before the deadline) are the parent's own, never sent.
The other processes' messages are typed beside their servers: a fork request is harness.processes.zygote.ForkRequest
(the zygote, run as a script, imports nothing of the harness), the warm-cache row's harness.execution.warm_cache.EditRequest.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from harness.model.cell import Cell
from harness.model.outcome import CellResult, Stage
from harness.model.settings import Settings


@dataclass(frozen=True)
class CellRequest:
    """Run this cell under these settings."""

    cell: Cell
    settings: Settings
    # The process ends after this cell if the cell runs the case's code: nothing it leaves behind reaches another
    # cell, so the child need not clear it away (harness.processes.runner_child).
    last: bool = False

    def line(self) -> bytes:
        return (json.dumps({"cell": self.cell.id, "settings": self.settings.to_json(), "last": self.last}) + "\n").encode()

    @classmethod
    def parse(cls, line: str | bytes) -> CellRequest:
        data = json.loads(line)
        return cls(Cell.parse(data["cell"]), Settings.from_json(data["settings"]), bool(data.get("last")))


class EventKind(enum.Enum):
    READY = "ready"
    STAGE = "stage"
    RESULT = "result"
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    EOF = "eof"  # the parent's: the child's end closed
    TIMEOUT = "timeout"  # the parent's: nothing before the deadline


@dataclass(frozen=True)
class PlainEager:
    """What the harness calls in plain eager before a cell's path, to find the case's own faults every style would meet."""

    what: str  # "launcher", "backward", "reference"
    configs: int = 0  # the autotuned configs its first call compiles


@dataclass(frozen=True)
class Event:
    """One event of the child's; the fields its kind carries are set, the others left at their defaults."""

    kind: EventKind
    device: str | None = None  # ready: where the cells run
    broken_dtypes: dict[str, str] = field(default_factory=dict)  # ready: dtypes left out here, with why
    stage: Stage | None = None  # stage: the one entered
    # stage: the harness's check of the case's own code in plain eager (harness.execution.execute), entered with this
    # stage: what it calls ("launcher", "backward") and its autotuned configs, which its first call compiles
    plain_eager: PlainEager | None = None
    result: CellResult | None = None  # result
    # result: whether the case's code ran in the process (a cell its row does not apply to leaves it as it was)
    ran_case_code: bool = False

    def line(self) -> str:
        data: dict[str, Any] = {"event": self.kind.value}
        if self.kind is EventKind.READY:
            data.update(device=self.device, broken_dtypes=self.broken_dtypes)
        elif self.kind is EventKind.STAGE:
            assert self.stage is not None
            data["stage"] = self.stage.value
            if self.plain_eager is not None:
                data["plain_eager"] = {"what": self.plain_eager.what, "configs": self.plain_eager.configs}
        elif self.kind is EventKind.RESULT:
            assert self.result is not None
            data.update(result=self.result.to_json(), ran_case_code=self.ran_case_code)
        return json.dumps(data) + "\n"

    @classmethod
    def parse(cls, line: str | bytes) -> Event:
        data = json.loads(line)
        kind = EventKind(data["event"])
        if kind is EventKind.READY:
            return cls(kind, device=data["device"], broken_dtypes=data["broken_dtypes"])
        if kind is EventKind.STAGE:
            checking = data.get("plain_eager")
            return cls(kind, stage=Stage(data["stage"]), plain_eager=PlainEager(**checking) if checking else None)
        if kind is EventKind.RESULT:
            return cls(kind, result=CellResult.from_json(data["result"]), ran_case_code=data["ran_case_code"])
        return cls(kind)

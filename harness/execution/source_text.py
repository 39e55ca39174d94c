"""A program written out as text, section by section, from the harness's own definitions: what a reproducer is made of."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from harness.execution import call_stage, numerics, poison, transfer


@dataclasses.dataclass
class Source:
    """The file, assembled in sections."""

    imports: set[str] = dataclasses.field(default_factory=lambda: {"contextlib", "sys", "traceback"})
    sections: list[str] = dataclasses.field(default_factory=list)
    served: str = ""  # what the file runs as a new process that imports torch alone: right after torch's import

    def add(self, text: str) -> None:
        self.sections.append(text.strip("\n"))


def embedded(*parts: Any) -> str:
    """Harness definitions as source (a string part as it is): the reproducer runs the chart's own code, not a copy."""
    return "\n\n\n".join(part if isinstance(part, str) else inspect.getsource(part).strip() for part in parts)


def stage_rule_source() -> str:
    """The chart's own rule for the stage at which an artifact's call fails (harness.execution.execute), as source."""
    return embedded("import torch._dynamo.exc as dynamo_exc\nimport torch._inductor.exc as inductor_exc",
                     call_stage.compile_stage_exception_types, f"_TRACING_FILES = {call_stage._TRACING_FILES!r}",
                     call_stage._raised_while_tracing)


def copies_source() -> str:
    """How the chart copies a cell's inputs (harness.execution.transfer.copied: a view stays a view of its base), as source."""
    return embedded("import dataclasses", transfer.with_its_strides, transfer._viewed_base, transfer._dense, transfer.copied,
                     transfer.SentView, transfer.sent, transfer.received,
                     'def clone(inputs):\n    """Copies as the chart makes them: their strides, a view the same view of a copy of its base."""\n'
                     "    return tuple(copied(x, x.device) if isinstance(x, torch.Tensor) else x for x in inputs)")


def flatten_source() -> str:
    """How the chart lists a call's outputs (harness.execution.numerics.flatten), as source."""
    return embedded(numerics.flatten)


def poison_source() -> str:
    """The chart's poisoned allocators (harness.execution.poison), as source."""
    return inspect.getsource(poison)

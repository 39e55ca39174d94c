"""A program written out as text, section by section, from the harness's own definitions: what a reproducer is made of."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any


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

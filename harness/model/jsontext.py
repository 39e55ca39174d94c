"""JSON as every file the harness writes it: strict (RFC 8259), which parsers outside Python read.

Python's json writes non-finite floats as the bare tokens `Infinity` and `NaN`, which JavaScript's
JSON.parse, jq and most other parsers refuse. A cell's numbers can be non-finite (the largest error of a
kernel that wrote NaN or inf), so they are written as the strings "Infinity", "-Infinity" and "NaN", the
spelling JavaScript's Number() and Python's float() both read back, and every number field that may hold
one is read back through `number`.
"""

from __future__ import annotations

import json
import math
from typing import Any

NON_FINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def named(value: float) -> float | str:
    """A float as strict JSON holds it: itself if finite, else its name."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def number(value: Any) -> Any:
    """A number field read back: a non-finite number's name as the float it names; anything else as it is."""
    return NON_FINITE[value] if isinstance(value, str) and value in NON_FINITE else value


def strict(data: Any) -> Any:
    """`data` with every non-finite float, at any depth, replaced by its name."""
    if isinstance(data, float):
        return named(data)
    if isinstance(data, dict):
        return {key: strict(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict(value) for value in data]
    return data


def dumps(data: Any, **options: Any) -> str:
    """`json.dumps` that never writes a bare NaN or Infinity (allow_nan=False is the guard: a value that
    escaped `strict` raises here instead of making a file other parsers refuse)."""
    return json.dumps(strict(data), allow_nan=False, **options)


def _refuse(token: str) -> float:
    raise ValueError(f"{token} is not JSON (RFC 8259 has no non-finite numbers)")


def loads_strict(text: str) -> Any:
    """Parse as a strict parser does: a bare NaN or Infinity is an error (for checking what was written)."""
    return json.loads(text, parse_constant=_refuse)

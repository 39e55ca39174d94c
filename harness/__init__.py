"""triton-compat-matrix: which ways of wrapping a Triton kernel survive which PyTorch compile paths."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Backward", "Case", "CaseError", "Example", "Tolerance", "inputs"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the pytest plugin loads this package in every process, and a pytest worker
    # should start its runner before it pays for importing torch.
    if name == "inputs":
        return importlib.import_module("harness.inputs")
    if name in __all__:
        return getattr(importlib.import_module("harness.case"), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")

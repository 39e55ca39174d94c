"""triton-compat-matrix: which ways of wrapping a Triton kernel survive which PyTorch compile paths.

The case API (`Case`, `Backward`, ...) needs torch and is imported on first use, so the modules that only
read results (results, report, diff, repeat) work where torch is not installed.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's package, and warns that it cannot when, as
under `triton-compat-matrix run`, the package was imported first; the harness asserts nothing for pytest.
"""

from __future__ import annotations

import importlib
from typing import Any

_CASE_API = {"Backward": "harness.authoring.case", "Case": "harness.authoring.case", "Example": "harness.authoring.case",
             "Tolerance": "harness.authoring.case",
             "CaseError": "harness.model.errors", "inputs": "harness.authoring.inputs"}

__all__ = sorted(_CASE_API)


def __getattr__(name: str) -> Any:
    if name not in _CASE_API:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    module = importlib.import_module(_CASE_API[name])
    return module if name == "inputs" else getattr(module, name)

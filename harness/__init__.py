"""triton-compat-matrix: which ways of wrapping a Triton kernel survive which PyTorch compile paths."""

from harness import inputs
from harness.case import Case, CaseError, Example, Tolerance

__all__ = ["Case", "CaseError", "Example", "Tolerance", "inputs"]

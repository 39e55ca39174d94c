"""triton-compat-matrix: which ways of wrapping a Triton kernel survive which PyTorch compile paths."""

from harness import inputs
from harness.case import Backward, Case, CaseError, Example, Tolerance

__all__ = ["Backward", "Case", "CaseError", "Example", "Tolerance", "inputs"]

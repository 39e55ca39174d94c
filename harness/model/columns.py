"""The chart's columns: the wrapping styles a case's kernel is built in, and the control."""

from __future__ import annotations

import enum


class Wrapping(str, enum.Enum):
    RAW = "raw"  # @triton.jit launched from a plain Python function
    RAW_AUTOGRAD = "raw_autograd"  # the same launcher inside a torch.autograd.Function with the case's backward
    TRITON_OP = "triton_op"  # torch.library.triton_op + wrap_triton
    CUSTOM_OP = "custom_op"  # torch.library.custom_op + register_fake: opaque to the compiler
    CONTROL = "control"  # the case's plain PyTorch reference, no Triton at all

    @property
    def title(self) -> str:
        return _TITLES[self]


_TITLES = {
    Wrapping.RAW: "raw @triton.jit",
    Wrapping.RAW_AUTOGRAD: "raw kernel in autograd.Function",
    Wrapping.TRITON_OP: "triton_op + wrap_triton",
    Wrapping.CUSTOM_OP: "custom_op + register_fake",
    Wrapping.CONTROL: "control (PyTorch reference)",
}

STYLES = tuple(w for w in Wrapping if w is not Wrapping.CONTROL)  # the columns that wrap a Triton kernel
OPERATOR_STYLES = (Wrapping.TRITON_OP, Wrapping.CUSTOM_OP)  # the styles that register a torch.library operator
OP_NAMESPACE = "tcm"  # the operators' namespace: tcm::<case>_<style>

"""The chart's columns: the wrapping styles a case's kernel is built in, the library's own op, and the control."""

from __future__ import annotations

import enum
from typing import Any, Iterable


class Wrapping(str, enum.Enum):
    RAW = "raw"  # @triton.jit launched from a plain Python function
    RAW_AUTOGRAD = "raw_autograd"  # the same launcher inside a torch.autograd.Function with the case's backward
    TRITON_OP = "triton_op"  # torch.library.triton_op + wrap_triton
    CUSTOM_OP = "custom_op"  # torch.library.custom_op + register_fake: opaque to the compiler
    SHIPPED = "shipped"  # the op as its library ships it (Case.shipped): a column only for the cases that name one
    CONTROL = "control"  # the case's plain PyTorch reference, no Triton at all

    @property
    def title(self) -> str:
        return _TITLES[self]


_TITLES = {
    Wrapping.RAW: "raw @triton.jit",
    Wrapping.RAW_AUTOGRAD: "raw kernel in autograd.Function",
    Wrapping.TRITON_OP: "triton_op + wrap_triton",
    Wrapping.CUSTOM_OP: "custom_op + register_fake",
    Wrapping.SHIPPED: "the library's own op (shipped)",
    Wrapping.CONTROL: "control (PyTorch reference)",
}

STYLES = tuple(w for w in Wrapping if w is not Wrapping.CONTROL)  # the columns that run a Triton kernel
GENERATED_STYLES = tuple(w for w in STYLES if w is not Wrapping.SHIPPED)  # the styles the harness builds from the launcher
OPERATOR_STYLES = (Wrapping.TRITON_OP, Wrapping.CUSTOM_OP)  # the styles that register a torch.library operator
OP_NAMESPACE = "tcm"  # the operators' namespace: tcm::<case>_<style>


class ShippedKind(str, enum.Enum):
    """What a case's shipped op is: it decides the rows that apply to it (opcheck tests torch.library operators)."""

    OPERATOR = "torch.library operator"  # torch.ops.ns.name, a custom_op or a triton_op
    AUTOGRAD_FUNCTION = "autograd.Function"  # SomeFunction.apply
    FUNCTION = "plain function"


def present(wrappings: Iterable[Wrapping], among: Iterable[Any]) -> list[Wrapping]:
    """The columns a chart shows: every one of `wrappings`, except the shipped column where no cell of
    `among` (cells, or their wrappings) has one: a chart of cases without a shipped op looks as it always did."""
    seen = {getattr(c, "wrapping", c) for c in among}
    return [w for w in wrappings if w is not Wrapping.SHIPPED or w in seen]

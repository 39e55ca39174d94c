"""The published chart of the PyTorch tutorial "Using User-Defined Triton Kernels with torch.compile",
kept as data. Each of its claims names the measured rows that test it."""

from __future__ import annotations

from dataclasses import dataclass

from harness.model.columns import Wrapping
from harness.model.rows import Row

SOURCE = "PyTorch tutorial: Using User-Defined Triton Kernels with torch.compile (chart of which API to use)"

RAW, TRITON_OP, CUSTOM_OP = "raw Triton kernel", "triton_op", "custom_op"
COLUMN_OF = {
    Wrapping.RAW: RAW,
    Wrapping.RAW_AUTOGRAD: RAW,  # the tutorial's raw column covers a kernel in an autograd.Function too
    Wrapping.TRITON_OP: TRITON_OP,
    Wrapping.CUSTOM_OP: CUSTOM_OP,
}


@dataclass(frozen=True)
class TutorialQuestion:
    """A row of the tutorial's chart ("Supports inference"): its published answers and the rows that measure them."""

    title: str
    rows: tuple[Row, ...]  # the measured rows whose cells test this claim
    claims: dict[str, str]  # tutorial column -> its published answer; empty for rows the tutorial lacks
    traces_into: bool = False  # judged by what the compiled graph holds, not by pass/fail
    # Rows that run the same artifacts in the process that built them: the entry says for how many cases a
    # style passes there but not on `rows` (a package that loads only where the case's module was imported).
    in_process: tuple[Row, ...] = ()


QUESTIONS = (
    TutorialQuestion("Supports inference", (Row.EAGER,), {RAW: "Yes", TRITON_OP: "Yes", CUSTOM_OP: "Yes"}),
    TutorialQuestion("Supports training", (Row.TRAIN_EAGER,), {RAW: "In the majority of cases", TRITON_OP: "Yes", CUSTOM_OP: "Yes"}),
    TutorialQuestion("Supports torch.compile", (Row.COMPILE_DEFAULT,), {RAW: "Yes", TRITON_OP: "Yes", CUSTOM_OP: "Yes"}),
    TutorialQuestion(
        "Supports torch.compile(fullgraph=True)",
        (Row.COMPILE_FULLGRAPH,),
        {RAW: "In the majority of cases", TRITON_OP: "In the majority of cases", CUSTOM_OP: "In all cases"},
    ),
    TutorialQuestion(
        "Does torch.compile trace into the implementation?",
        (Row.COMPILE_FULLGRAPH,),
        {RAW: "Yes", TRITON_OP: "Yes", CUSTOM_OP: "No"},
        traces_into=True,
    ),
    TutorialQuestion("Supports AOTInductor", (Row.AOTI_STRICT, Row.AOTI_NONSTRICT), {RAW: "Yes", TRITON_OP: "Yes", CUSTOM_OP: "No"}),
    # Can I deploy it? The same claim, for a package run in a new process that never imported the case, as a
    # serving process loads it; passing only in the process that built it is said beside the entry.
    TutorialQuestion("Supports AOTInductor, package run in a fresh Python process (non-strict export)", (Row.AOTI_FRESH_NONSTRICT,),
                {RAW: "Yes", TRITON_OP: "Yes", CUSTOM_OP: "No"}, in_process=(Row.AOTI_NONSTRICT,)),
    # The same claim, for a package deployed where there is no Python (a C++ server).
    TutorialQuestion(
        "Supports AOTInductor, run from C++ without Python",
        (Row.AOTI_CPP_STRICT, Row.AOTI_CPP_NONSTRICT),
        {RAW: "Yes", TRITON_OP: "Yes", CUSTOM_OP: "No"},
    ),
    TutorialQuestion(
        "Supports PyTorch subsystems (FlopCounterMode, CPU fallback, tensor subclasses)",
        (Row.FLOP_COUNTER, Row.CPU_FALLBACK, Row.TENSOR_SUBCLASS),
        {RAW: "No", TRITON_OP: "Yes", CUSTOM_OP: "Yes"},
    ),
    # Rows the tutorial does not have.
    TutorialQuestion("Supports torch.export(strict=True)", (Row.EXPORT_STRICT,), {}),
    TutorialQuestion("Supports torch.export(strict=False)", (Row.EXPORT_NONSTRICT,), {}),
    TutorialQuestion("Supports AOTInductor from strict export", (Row.AOTI_STRICT,), {}),
    TutorialQuestion("Supports AOTInductor from non-strict export", (Row.AOTI_NONSTRICT,), {}),
    TutorialQuestion("Supports training under torch.compile", (Row.TRAIN_COMPILE_DEFAULT,), {}),
    TutorialQuestion("Supports training under torch.compile(fullgraph=True)", (Row.TRAIN_COMPILE_FULLGRAPH,), {}),
    TutorialQuestion("Passes torch.library.opcheck", (Row.OPCHECK,), {}),
)


def agrees(claim: str, passed: int, counted: int) -> bool:
    """Whether measured counts are consistent with a published answer."""
    if counted == 0:
        return True  # nothing measured, nothing refuted
    text = claim.lower()
    if text in ("yes", "in all cases"):
        return passed == counted
    if text == "no":
        return passed == 0
    if text.startswith("in the majority"):
        return passed * 2 > counted
    raise ValueError(f"unknown claim {claim!r}")

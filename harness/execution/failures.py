"""How what a cell raised becomes its outcome: the stage a foreign exception fails at, and what the results record of it.

Exceptions from PyTorch, Triton and the case's own code are foreign: they become the cell's outcome here and nowhere else
(harness.execution.execute's `stage` and `case_code` call `failure`; `record` writes the outcome, stage, kind and message).
"""

from __future__ import annotations

import torch

from harness.execution import paths
from harness.execution.blame import LauncherRaised, harness_named_module
from harness.execution.call_stage import stage_of_call
from harness.model.errors import HarnessError, Mismatch, first_line
from harness.model.outcome import CaseCodeError, CellResult, Fault, HarnessFault, Outcome, Stage, StageFailure, detail

# The harness's exceptions that already say what the cell's outcome is; everything else raised inside a
# stage is foreign and becomes a failure at that stage.
DECIDED = (StageFailure, Mismatch, CaseCodeError, HarnessFault)

def pending_device_fault() -> BaseException | None:
    if not torch.cuda.is_available():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as fault:  # an illegal address, a device-side assert: the context is now unusable
        return fault
    return None


def failure(stage: Stage, error: BaseException, called: bool = False) -> StageFailure | HarnessFault:
    """The one place where a foreign exception becomes a failure at a stage. On a call of an artifact, a
    kernel that faulted before a Python error was raised is what went wrong first (unchecked, its CUDA error
    would surface in whichever call came next, and the outcome would depend on timing), and a Dynamo,
    Inductor or Triton compilation error is a compile failure, whichever stage announced the call. A module the
    harness named that cannot be imported is the harness's fault at that stage, whoever asked for it: the path
    was not measured (harness.execution.blame.harness_named_module)."""
    if called:
        error = pending_device_fault() or error
        stage = stage_of_call(error)
    named = harness_named_module(error)
    if named is not None:
        return HarnessFault(stage, named)
    return StageFailure(stage, error)


def type_name(error: BaseException) -> str:
    """The error kind a results file records: a builtin by its name, the harness's own by `harness.<Class>`
    whichever module defines it (so moving a module changes no recorded data), a path module's among them (plain
    PyTorch, its exceptions no HarnessError: harness.execution.paths), any other by its module path."""
    kind = type(error)
    if kind.__module__ == "builtins":
        return kind.__name__
    if isinstance(error, HarnessError) or kind.__module__.startswith(f"{paths.__name__}."):
        return f"harness.{kind.__qualname__}"
    return f"{kind.__module__}.{kind.__qualname__}"


def record(result: CellResult, exc: BaseException) -> None:
    """A decided exception as the cell's outcome, stage and message."""
    if isinstance(exc, Mismatch):
        result.outcome, result.stage = Outcome.WRONG, Stage.RUN
        result.message, result.max_error, result.mismatched = first_line(exc), exc.max_error, exc.mismatched
        return
    assert isinstance(exc, (StageFailure, CaseCodeError, HarnessFault))
    if isinstance(exc, StageFailure):
        result.outcome = Outcome.FAIL
    else:  # not a finding about the path: the case's own code raised, or the harness broke
        result.outcome, result.fault = Outcome.ERROR, Fault.CASE if isinstance(exc, CaseCodeError) else Fault.HARNESS
    result.stage = exc.stage
    result.error_type, result.message, result.detail = type_name(exc.error), first_line(exc.error), detail(exc.error)
    if isinstance(exc, LauncherRaised):  # what it raised, where in the case's code, and the fix; then the traceback
        result.message, result.detail = exc.explained, detail(Exception(f"{exc.explained}\n\n{exc.where}"))

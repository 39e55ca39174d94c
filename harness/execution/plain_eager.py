"""The check of a case's own code in plain eager before a cell runs its row: reference, launcher and backward once each.

Called plain, once a runner process per case. What the case's own code raises there every style would meet on every
row: the case's error, with its fix (harness.execution.blame), not a failure of the styles.
"""

from __future__ import annotations

import dataclasses
import time
import traceback

import torch

from harness.authoring.case import Example, dtype_name
from harness.execution import applicability, backward_check
from harness.execution import wrapping as wrappings
from harness.execution.blame import LauncherRaised, case_files, raised_by_case_code, shown
from harness.execution.failures import failure, pending_device_fault
from harness.model.columns import OPERATOR_STYLES, Wrapping
from harness.model.errors import CaseError, first_line
from harness.model.messages import PlainEager
from harness.model.outcome import Stage


@dataclasses.dataclass(frozen=True)
class Raised:
    """What a plain eager call of a case's launcher raised in the case's own code, kept without its traceback
    (whose frames would hold the call's tensors): LauncherRaised's parts."""

    error: BaseException
    explained: str
    where: str


# One plain eager call of each launcher a runner process tests, by (case, the callable's column, dtype, device):
# what it raised in the case's own code, why it cannot be tested here (an interpreter limit, as a str), or None where
# it ran or raised something the cells must measure.
_plain_eager: dict[tuple[str, str, str, str], Raised | str | None] = {}


class NotTestedHere(Exception):
    """The launcher's plain eager call met a limit of this machine every style would meet (applicability)."""


class PlainEagerChecks:
    """Execution's checks in plain eager (harness.execution.execute): its cell, case, run device, announce, case_code and
    spent are theirs."""

    def launcher_in_plain_eager(self) -> None:
        """Raise the case's error where its launcher raises in the case's own code when called in plain eager.

        Before a style cell runs its row, the launcher (the shipped op, in its column) is called once, plain, on the
        example input of each dtype the cell checks, on the run's device: once a runner process per case, callable
        and dtype. What it raises in the case's own code (raised_by_case_code) every style meets on every row; it is
        the case's error, with its place and the fix, in each of them, not a failure of the styles. An interpreter
        limit every style meets, which a probe confirms (applicability.interpreter_scalar_limit), makes the cell not
        tested here. Whatever else the call raises (torch, a Triton compile error) is left for the cell to measure as
        it would without the call, except a device fault: the context it poisons would fail the cell's next step, in
        the wrong place, so it is the cell's failure at run. It runs before the cell resets Dynamo and the
        autotuners, so it leaves nothing the cell measures. The control runs no launcher."""
        if self.cell.wrapping is Wrapping.CONTROL:
            return
        called = self.cell.wrapping if self.cell.wrapping is Wrapping.SHIPPED else Wrapping.RAW
        for dtype in self.case.dtypes:
            key = (self.case.name, called.value, dtype_name(dtype), self.run_device)
            if key not in _plain_eager:
                _plain_eager[key] = self._call_in_plain_eager(called, dtype)
            raised = _plain_eager[key]
            if isinstance(raised, str):  # a cell that runs the reference alone (a CPU fallback) still measures it
                if applicability.runs_reference_only(self.cell):
                    continue
                raise NotTestedHere(raised)
            if raised is not None:
                raise LauncherRaised(Stage.RUN, raised.error, raised.explained, raised.where)

    def reference_in_plain_eager(self) -> None:
        """Call the case's reference once, plain, on the first dtype's example input, once a runner process per case and
        device, within the check's deadline (the parent's): a reference that never returns is the case's error in every
        cell, the control's too, not each cell's timeout. What it raises, the cell meets and records where it checks."""
        case = self.case
        key = (case.name, "reference", dtype_name(case.dtypes[0]), self.run_device)
        if key in _plain_eager:
            return
        example = Example(case.dtypes[0], case.example_shape, seed=0)
        self.announce(Stage.REFERENCE, PlainEager("reference"))
        try:
            case.reference_outputs(*case.inputs(example, self.run_device))
        except Exception:  # noqa: BLE001 - what the reference raises, the cell meets and measures
            pass
        finally:
            self.announce(Stage.SETUP, None)
        _plain_eager[key] = None

    def backward_in_plain_eager(self) -> None:
        """Raise the case's error where its backward, which this training cell's operator style registers as an
        operator, returns aliases or writes into its arguments (harness.execution.backward_check): once a runner
        process per case and device, on the first dtype's example."""
        case = self.case
        if not (self.training and self.cell.wrapping in OPERATOR_STYLES and case.backward is not None and case.backward.kernels):
            return
        key = (case.name, "backward", dtype_name(case.dtypes[0]), self.run_device)
        if key not in _plain_eager:
            example = Example(case.dtypes[0], case.example_shape, seed=0)
            self.announce(Stage.RUN, PlainEager("backward", case.autotune_configs))
            try:
                problem = backward_check.misdeclared(case, example, self.run_device)
            except Exception:  # noqa: BLE001 - what the plain calls raise, the cell meets and measures
                problem = None
            finally:
                self.announce(Stage.RUN, None)
            _plain_eager[key] = None if problem is None else Raised(CaseError(case.name, problem), problem, "")
        raised = _plain_eager[key]
        if isinstance(raised, Raised):
            raise LauncherRaised(Stage.RUN, raised.error, raised.explained, raised.where)

    def _call_in_plain_eager(self, called: Wrapping, dtype: torch.dtype) -> Raised | str | None:
        example = Example(dtype, self.case.example_shape, seed=0)
        with self.case_code(Stage.SETUP):
            inputs = self.case.inputs(example, self.run_device)
        try:
            call = wrappings.build(self.case, called)
        except Exception:  # noqa: BLE001 - the cell's wrap stage meets it again, and says why
            return None
        # A launcher that crashes does so running; one that hangs, in the harness's check, which the parent ends.
        self.announce(Stage.RUN, PlainEager("launcher", self.case.autotune_configs))
        start = time.perf_counter()
        try:
            call(*inputs)
        except Exception as exc:
            fault = pending_device_fault()
            if fault is not None:
                raise failure(Stage.RUN, fault) from exc
            return applicability.interpreter_scalar_limit(exc, self.environment) or self._raised_by_the_case(exc, called, example)
        finally:
            self.spent(Stage.RUN.value, time.perf_counter() - start)
            self.announce(Stage.RUN, None)  # the check is over: the cell's own deadline again
        fault = pending_device_fault()
        if fault is not None:
            raise failure(Stage.RUN, fault) from fault
        return None

    def _raised_by_the_case(self, error: BaseException, called: Wrapping, example: Example) -> Raised | None:
        """The case's error, where the case's own code raised `error`, or None."""
        try:
            raiser = raised_by_case_code(error, case_files(self.case))
        except Exception:  # noqa: BLE001 - a traceback the harness cannot read blames no one: the cell measures
            return None
        if raiser is None:
            return None
        what = "the shipped op" if called is Wrapping.SHIPPED else "the launcher"
        place = f"{shown(raiser.filename)}:{raiser.lineno}, in {raiser.function}"
        if raiser.launch:
            where, fix = f"launching a Triton kernel at {place}: {raiser.source[:200]}", "fix the launch: pass the kernel each of its parameters"
        else:
            where, fix = f"raised at {place}", f"fix {what}"
        explained = (f"{what} raises in plain eager, before any wrapping ({example}): {type(error).__name__}: {first_line(error)} "
                     f"({where}): {fix}")
        frames = "".join(traceback.format_exception(type(error), error, error.__traceback__, limit=-12))
        error.__traceback__ = error.__context__ = error.__cause__ = None  # kept for the process: let go of the call's frames
        return Raised(error, explained, frames)

"""Which cells run here. Each rule is a predicate over the cell, its case and the run's environment (RunEnvironment:
the device, whether Triton's interpreter runs the kernels, the dtypes this machine gets wrong, the profile, and the
probes that answer what only trying shows), giving why the cell is not tested here, or None; `select` asks them in
turn and narrows the case to the dtypes the run tests. Nothing here runs a cell.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from typing import Any, Callable, Mapping

import torch

from harness.authoring import registry
from harness.authoring.case import Case, dtype_name
from harness.environment import machine, probe
from harness.execution import kernel_edit, warm_cache
from harness.execution.blame import extern_calls
from harness.model.cell import Cell
from harness.model.columns import OPERATOR_STYLES, Wrapping
from harness.model.rows import Kind, Row
from harness.model.settings import Profile


class Probes:
    """What only trying shows, each asked once a run (harness.environment.probe), its answer a failure or None.
    `record_dir`: where a run's processes share the answers."""

    def __init__(self, record_dir: str | None):
        self.record_dir = record_dir

    def autotuning(self, device: str) -> str | None:
        return probe.autotuning(device, self.record_dir)

    def interpreted_scalar_to(self, kind: str) -> str | None:
        return probe.interpreted_scalar_to(kind, self.record_dir)

    def interpreted_extern(self, module: str, name: str, arity: int) -> str | None:
        return probe.interpreted_extern(module, name, arity, self.record_dir)

    def wrap_triton_takes_interpreted(self) -> str | None:
        return probe.wrap_triton_takes_interpreted(self.record_dir)

    def interpreted_launch_under_compile(self, options: Mapping[str, Any]) -> str | None:
        return probe.interpreted_launch_under_compile(options, self.record_dir)


@dataclasses.dataclass(frozen=True)
class RunEnvironment:
    """What decides, beside the cell and its case, whether a cell runs here."""

    device: str  # the run's device; a row may run elsewhere (RowSpec.device: the CPU fallback)
    interpreted: bool  # Triton's CPU interpreter runs the kernels (TRITON_INTERPRET=1)
    profile: Profile
    broken_dtypes: Mapping[str, str] = dataclasses.field(default_factory=dict)  # dtype name: why (probe.broken_dtypes)
    probes: Probes = dataclasses.field(default_factory=lambda: Probes(None))

    @classmethod
    def here(cls, device: str, profile: Profile, broken_dtypes: Mapping[str, str] | None = None) -> RunEnvironment:
        """This process's environment: the interpreter and the probes' folder read from its variables, once."""
        return cls(device=device, interpreted=os.environ.get("TRITON_INTERPRET") == "1", profile=profile,
                   broken_dtypes=dict(broken_dtypes or {}), probes=Probes(machine.records_dir()))

    def row_device(self, cell: Cell) -> str:
        return cell.row.spec.device or self.device


@dataclasses.dataclass(frozen=True)
class Selection:
    """The case narrowed to the dtypes the run tests, the dtypes left out with why, and why the cell does not run
    (None: it runs)."""

    case: Case
    dtypes_skipped: dict[str, str]
    skipped: str | None


Rule = Callable[[Cell, Case, RunEnvironment], "str | None"]


def runs_reference_only(cell: Cell) -> bool:
    """The CPU fallback of a generated operator style runs the reference registered as its CPU kernel, never the
    kernel: whatever the machine cannot do with the kernel, that cell still measures the fallback."""
    return cell.row is Row.CPU_FALLBACK and cell.wrapping in OPERATOR_STYLES


def ships_no_op(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    if cell.wrapping is Wrapping.SHIPPED and case.shipped is None:
        return "the case names no shipped op (Case.shipped): its library's own op has no column"
    return None


def row_does_not_apply(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    return cell.row.spec.applies(case, cell.wrapping)


def case_requires(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    """The case's own reason it cannot run here (Case.requires), for every column but the control: the control runs the
    reference alone, which needs none of the kernel's hardware, so the reference is still checked on every row."""
    if cell.wrapping is Wrapping.CONTROL or not case.requires:
        return None
    return case.requires(env.device)


def row_needs_cuda(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    needs, device = cell.row.spec.needs_cuda, env.row_device(cell)
    return f"{needs}; this run's device is {device}" if needs and not device.startswith("cuda") else None


def torch_lacks(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    """Not in this torch: the row calls an API (RowSpec.needs_torch) the installed torch does not have."""
    needed = cell.row.spec.needs_torch
    if not needed:
        return None
    holder: Any = torch
    for part in needed.split(".")[1:]:
        if not hasattr(holder, part):
            return f"not in this torch: torch {torch.__version__} has no {needed}, which the row calls"
        holder = getattr(holder, part)
    return None


def interpreter_cannot_compile(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    """Why this cell would measure Triton's interpreter rather than the kernel, or None. On the CPU interpreter a raw
    launch is plain Python to Dynamo: where a trivial kernel's launch fails under this row's torch.compile with graph
    breaks allowed (probed once a run), every kernel's does, after Dynamo has walked the interpreter's code for
    5-10 s. With fullgraph Dynamo stops at the launch, and the cell runs. Like a dtype the interpreter gets wrong, the
    cell is left out, with the probe's answer."""
    options = cell.row.spec.compile_options
    if env.row_device(cell) != "cpu" or not env.interpreted or options is None:
        return None
    warm = cell.row.spec.kind is Kind.WARM_CACHE
    if not warm and (options.get("fullgraph") or cell.wrapping not in (Wrapping.RAW, Wrapping.RAW_AUTOGRAD)):
        return None
    failure = env.probes.interpreted_launch_under_compile(options)
    if failure is None:
        return None
    compiled = f"torch.compile({', '.join(f'{k}={v!r}' for k, v in options.items())})"
    if warm:  # with no kernel in any compiled code, no cache can serve an old kernel: every style would pass by default
        return (f"Triton's interpreter runs the kernels, and {compiled} cannot trace an interpreted launch here (probed once a "
                f"run with a trivial kernel: {failure}): no compiled code holds a kernel, so a warm cache cannot serve an old one")
    return (f"Triton's interpreter runs this kernel, and {compiled} "
            f"cannot run an interpreted launch here (probed once a run with a trivial kernel: {failure})")


def cannot_autotune_here(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    """Why a case whose kernels autotune cannot be tested on this device (probed once a run), or None. The control
    runs no kernel, so it still runs: the path itself is measured."""
    # An autotuner given its own do_bench times configs without a driver: only the default benchmarker is probed
    # (triton keeps a given one as `_do_bench`; a triton that does not is not second-guessed).
    default_timing = [a for a in case.autotuners if hasattr(a, "_do_bench") and a._do_bench is None]
    if not default_timing or cell.wrapping is Wrapping.CONTROL or runs_reference_only(cell):
        return None
    failure = env.probes.autotuning(env.device)
    if failure is None:
        return None
    return f"not tested here: Triton's autotuner cannot run on this device (probed once a run with a trivial autotuned add: {failure})"


def interpreter_lacks_extern(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    """Why Triton's interpreter cannot run this case's kernels, or None: under the interpreter, a kernel (or a
    @triton.jit function it calls) that calls a device-library function (libdevice) the interpreter cannot run, which
    a trivial kernel calling the same function shows (probed once a run). A limit of the machine, not a finding: on a
    GPU the compiler supplies the function and the cell runs. The control runs no kernel, so it still runs. A kernel
    that names the function only in a branch it never takes is left out here too."""
    if cell.wrapping is Wrapping.CONTROL or not env.interpreted or runs_reference_only(cell):
        return None
    for caller, function in extern_calls(case):
        arity = sum(not p.name.startswith("_") for p in inspect.signature(function).parameters.values())
        failure = env.probes.interpreted_extern(function.__module__, function.__name__, arity)
        if failure is not None:
            return (f"not tested here: Triton's interpreter cannot run {function.__module__}.{function.__name__}, which "
                    f"{caller} (probed once a run with a trivial kernel calling it: {failure})")
    return None


def wrap_triton_refuses_interpreted(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    """Why the triton_op style cannot be tested on Triton's interpreter with this torch (probed once a run: torch 2.11
    and older refuse to wrap_triton an interpreted kernel), or None. Its CPU fallback runs the reference only, so it
    still runs."""
    if cell.wrapping is not Wrapping.TRITON_OP or not env.interpreted or runs_reference_only(cell):
        return None
    failure = env.probes.wrap_triton_takes_interpreted()
    if failure is None:
        return None
    return ("not tested here: this torch's wrap_triton refuses the kernels of Triton's CPU interpreter, so the triton_op "
            f"style cannot run here (probed once a run with a trivial kernel: {failure}); on a GPU it runs")


def interpreter_scalar_limit(error: BaseException, env: RunEnvironment) -> str | None:
    """Why a launcher's plain eager call failed on an interpreter limit, not on the case or the path, or None: on the
    interpreter, a kernel that calls `.to(...)` on a scalar argument given as a Python float or int meets the number
    itself (probed once a run with a trivial kernel doing the same). Every style's cell would fail the same way; on
    a GPU the argument is a scalar of the kernel's and the cells run. Asked of what the launcher raised, since which
    arguments are Python numbers shows only when it is called."""
    found = re.search(r"'(float|int)' object has no attribute 'to'", str(error)) if env.interpreted else None
    failure = found and env.probes.interpreted_scalar_to(found.group(1))
    if not failure or found.group(0) not in failure:  # the probe meets the same limit, or the launcher's failure is its own
        return None
    return (f"not tested here: Triton's interpreter hands a kernel a Python {found.group(1)} argument as the number itself, "
            f"and this kernel converts one with .to(...) (probed once a run with a trivial kernel doing so: {failure}); "
            "on a GPU the argument is a scalar of the kernel's and the cell runs")


def left_to_other_profiles(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    return env.profile.leaves_out(cell.row.value, builtin=registry.builtin(case), tags=case.tags)


def kernel_not_editable(cell: Cell, case: Case, env: RunEnvironment) -> str | None:
    """The warm-cache row's question needs every case kernel edited in its source: where one cannot be (no source
    file, a body on its def's line), the row cannot ask it of this case, which is neither the style's finding nor the
    environment's."""
    if cell.row.spec.kind is not Kind.WARM_CACHE:
        return None
    try:
        warm_cache.edit_request(case, cell.wrapping.value)
    except kernel_edit.KernelNotEditable as exc:
        return f"not tested here: the row edits each kernel's source, and {exc}"
    except kernel_edit.EditNotLoaded:
        return None  # the harness's own failure: the cell records it as such
    return None


# Asked in this order; the first reason given is the cell's. The cheap, certain ones first: a probe runs only for a
# cell no earlier rule left out.
RULES: tuple[Rule, ...] = (ships_no_op, row_does_not_apply, torch_lacks, case_requires, row_needs_cuda, interpreter_cannot_compile,
                           cannot_autotune_here, interpreter_lacks_extern, wrap_triton_refuses_interpreted,
                           left_to_other_profiles, kernel_not_editable)


def dtypes(case: Case, env: RunEnvironment) -> tuple[tuple[Any, ...], dict[str, str]]:
    """The case's dtypes this run tests, and those it leaves out with why: those this machine gets wrong, then those
    past the profile's dtypes a cell."""
    skipped = {dtype_name(d): env.broken_dtypes[dtype_name(d)] for d in case.dtypes if dtype_name(d) in env.broken_dtypes}
    testable = tuple(d for d in case.dtypes if dtype_name(d) not in env.broken_dtypes)
    per_cell = env.profile.dtypes_per_cell
    if per_cell is not None:
        skipped.update({dtype_name(d): f"this run's profile checks {per_cell} dtype(s) a cell" for d in testable[per_cell:]})
        testable = testable[:per_cell]
    return testable, skipped


def select(cell: Cell, case: Case, env: RunEnvironment) -> Selection:
    """Whether `cell` runs here, and on which of its case's dtypes."""
    testable, skipped = dtypes(case, env)
    reason = next((r for rule in RULES if (r := rule(cell, case, env))), None)
    if not testable:
        reason = "no dtype of this case can be tested here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items())
    return Selection(case=dataclasses.replace(case, dtypes=testable), dtypes_skipped=skipped, skipped=reason)

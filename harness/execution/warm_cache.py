"""Warm caches after a kernel edit. Does a new process, compiling on the caches a first compile left, run the
kernel as it is now or as it was?

The cell's own process compiles the style first (with Inductor's and AOTAutograd's on-disk caches, as a user's
process does). Then every case kernel's source is edited (same name; one statement, `_tcm_edit_<kernel> = 2`,
put in front of its body's first simple statement on the same line, so no other line moves) and a new Python process
loads the edited source under the original file name and module, builds the same style, compiles it with the
same cache directories and runs it. Inductor puts a user kernel's source into the code it generates, and hands
every module it generates or loads from its cache to `GraphLowering.save_output_code`: a kernel whose compiled
code lacks the edit came from the cache, the kernel as it was. That is `wrong`, with the caches that hit.

How the new process loads the edit, wherever a kernel is defined, is harness.execution.kernel_edit's.

What the row cannot do is the harness's, never the style's or the environment's: a kernel it cannot edit
(KernelNotEditable) and a new process that cannot load the edit, find the case or build its style
(EditNotLoaded) make the cell an ERROR with fault "harness" (HarnessFault). What torch does in the new process,
compiling and running the edited style, is the cell's finding: a failure there fails the cell
(NewProcessFailure), and a stale kernel is `wrong` (StaleKernel).

The new process is `python -m harness.execution.warm_cache`, one a cell, served and asked as
harness.processes.case_process says; the cell's side is `EditedInNewProcess` (one a dtype) and `NewProcess`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Mapping

import torch
from torch._dynamo.utils import counters
from torch._inductor.graph import GraphLowering

from harness.authoring import registry
from harness.authoring.case import Case, kernel_name
from harness.execution import transfer
from harness.execution import wrapping as wrappings
from harness.execution.kernel_edit import EditNotLoaded, edited_sources, load_edited_case, marker
from harness.model.columns import Wrapping
from harness.model.errors import CaseError, HarnessError, Mismatch, described, first_line
from harness.model.outcome import HarnessFault, Stage
from harness.processes import autotune_timing, profiling
from harness.processes.case_process import CaseProcess, serve
from harness.processes.helper_process import CellProcesses

EDIT_TIMEOUT_S = 600.0


class NewProcessFailure(HarnessError):
    """The new process failed, its error's first line: compiling or running the edited style (the cell's finding), or,
    wrapped in HarnessFault, the harness's own exchange with it (dying while it loads the edit)."""


@dataclasses.dataclass(frozen=True)
class Edit:
    """What the new process needs to load the edited case and build its style: the edited sources (edited_sources),
    the case's name and module, as harness.authoring.registry loads it, and the style."""

    case: str
    case_module: str
    wrapping: str
    sources: dict[str, dict[str, Any]]
    root: str | None = None  # the folder the case's module imports from by its dotted name (a package of cases given as a folder)
    imported_as: str | None = None  # the name the cell's process imported the case's module under (registry.Location)

    def key(self) -> str:
        """The same edit, the same key: the new process loads each once."""
        return json.dumps([self.sources, self.case_module, self.case, self.wrapping], sort_keys=True)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Edit:
        return cls(data["case"], data["case_module"], data["wrapping"], data["sources"], data.get("root"), data.get("imported_as"))


@dataclasses.dataclass(frozen=True)
class EditRequest:
    """One request to the new process: the edit; where there are `inputs` (a file torch.save wrote), compile the style
    with `options` on them on `device` and save what it returns to `outputs`."""

    edit: Edit
    options: dict[str, Any]
    inputs: str | None = None
    outputs: str | None = None
    device: str | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> EditRequest:
        return cls(**{**data, "edit": Edit.of(data["edit"])})


def edit_request(case: Case, wrapping: str) -> Edit:
    """What the new process needs to load the edited case and build its style: the edited sources, the case's name
    and its module, as harness.authoring.registry loads it (registry.location). EditNotLoaded where the case names no
    module; KernelNotEditable where a kernel cannot be edited."""
    try:
        where = registry.location(case)
    except CaseError as exc:
        raise EditNotLoaded(str(exc)) from exc
    return Edit(case.name, where.module, wrapping, edited_sources(case.kernels, where.file), where.root, where.imported_as)


class NewProcess(CaseProcess):
    """The new process of one warm-cache cell, started at the cell's first call: it loads the edited kernels and
    builds the style once, then compiles and runs each request (one per dtype) on the warm caches, each compile
    its first in that process since Dynamo's caches are reset before it. One process a cell, not one a dtype:
    torch's import and the case's loading are paid once."""

    def __init__(self, workdir: str):
        super().__init__("harness.execution.warm_cache", workdir, prefix="warm-cache-", failure=NewProcessFailure,
                         env={**os.environ, "PYTHONPATH": registry.search_path()})
        self.loaded: set[str] = set()  # the edits it has loaded, by Edit.key


class EditedInNewProcess:
    """The cell's artifact on this row for one dtype: each call runs the edited kernel in the cell's new process
    (`session` keeps it for the cell's other dtypes) on the warm caches, and raises StaleKernel where the
    compiled code was the kernel as it was. Made, it has checked that every kernel can be edited; `load` has the
    new process load the edit. What the harness cannot do there raises HarnessFault: the cell's ERROR, the
    harness's fault, never a failure of the style (or, through its control, of the environment)."""

    def __init__(self, case: Case, wrapping: str, compile_options: dict[str, Any], workdir: str, processes: CellProcesses):
        self.case, self.wrapping, self.options = case, wrapping, dict(compile_options)
        try:
            self.edit = edit_request(case, wrapping)
        except Exception as exc:  # noqa: BLE001 - the harness's own edit of the case's files: whatever it raises is its fault
            raise HarnessFault(Stage.WRAP, exc) from exc
        self.key = self.edit.key()
        self.workdir, self.processes = workdir, processes
        self.calls = 0
        self.report: dict[str, Any] = {}

    def load(self) -> None:
        """The cell's new process, started if need be, with the edited case loaded and its style built: what the
        harness cannot do there fails the cell now (HarnessFault), before any example."""
        try:
            self._process()
        except HarnessFault:
            raise
        except Exception as exc:  # noqa: BLE001 - starting the process, writing its request: the harness's own work
            raise HarnessFault(Stage.WRAP, exc) from exc

    def _process(self) -> NewProcess:
        process = self.processes.warm_cache
        if not isinstance(process, NewProcess) or not process.alive():
            process = self.processes.warm_cache = NewProcess(self.workdir)
        if self.key not in process.loaded:
            self._ask(process, {}, loading=True)
            process.loaded.add(self.key)
        return process

    def _next_name(self) -> str:
        """Names a call's files (in the new process's folder, shared by the cell's dtypes) uniquely."""
        self.calls += 1
        return f"{id(self):x}-{self.calls}"

    def _ask(self, process: NewProcess, fields: dict[str, Any], loading: bool) -> dict[str, Any]:
        """One request (the edit, and `fields`) and its answer. While `loading`, the new process dying or hanging is
        the harness's fault: it has only imported modules the cell's own process imported."""
        try:
            report = process.ask(dataclasses.asdict(EditRequest(self.edit, self.options, **fields)), timeout_s=EDIT_TIMEOUT_S)
        except NewProcessFailure as exc:
            if loading:
                raise HarnessFault(Stage.WRAP, EditNotLoaded(f"loading the edited case: {first_line(exc)}")) from exc
            raise
        if report.get("not_loaded"):
            raise HarnessFault(Stage.WRAP, EditNotLoaded(report["not_loaded"]))
        if report.get("error"):
            raise NewProcessFailure(report["error"])
        return report

    def __call__(self, *inputs: Any) -> Any:
        process = self._process()
        name = self._next_name()
        sent, received = (os.path.join(process.dir, f"{name}.{part}") for part in ("in.pt", "out.pt"))
        torch.save([transfer.sent(x) for x in inputs], sent)
        runs_on = next((str(x.device) for x in inputs if isinstance(x, torch.Tensor)), "cpu")
        self.report = self._ask(process, {"inputs": sent, "outputs": received, "device": runs_on}, loading=False)
        outputs, after = torch.load(received, weights_only=False)
        with torch.no_grad():
            for x, written in zip(inputs, after):
                if isinstance(x, torch.Tensor):
                    x.copy_(written)
        if self.report["stale"]:
            raise StaleKernel(self.report)
        device = inputs[0].device if inputs and isinstance(inputs[0], torch.Tensor) else "cpu"
        outputs = [None if o is None else o.to(device) for o in outputs]
        return outputs[0] if self.report.get("single") else outputs


class StaleKernel(Mismatch):
    """The compiled code ran a kernel as it was before the edit: a wrong result, whatever its numbers."""

    def __init__(self, report: dict[str, Any]):
        hits = ", ".join(f"{k} {v}" for k, v in sorted(report.get("hits", {}).items()) if v) or "no cache hit counted"
        super().__init__("the output", None, None, message=f"stale kernel: the warm cache ran {', '.join(report['stale'])} as it was before the edit "
                         f"(the new process's compiled code lacks the edit; {hits})")


# -- the new process ------------------------------------------------------------------------------


def edited_case(edit: Edit) -> Case:
    """The case as the new process has it after the edit (harness.execution.kernel_edit.load_edited_case)."""
    return load_edited_case(edit.sources, registry.Location(edit.case_module, None, edit.root, edit.imported_as), edit.case)


def _edited_style(edit: Edit) -> tuple[Case, Any]:
    case = edited_case(edit)
    try:
        return case, wrappings.build(case, Wrapping(edit.wrapping))
    except Exception as exc:  # noqa: BLE001 - the cell's own process built this style from the same case
        raise EditNotLoaded(f"the {edit.wrapping} style of the edited case {case.name} cannot be built in the new "
                            f"process: {described(exc)}") from exc


def _serve(request: EditRequest, built: dict[str, Any]) -> dict[str, Any]:
    """One request: the edited case and its style (loaded at the process's first request, kept in `built`), then,
    where the request has inputs, compiled afresh (Dynamo's caches reset; Inductor's and AOTAutograd's on disk,
    warm) on them."""
    key = request.edit.key()
    if key not in built:
        try:
            built[key] = _edited_style(request.edit)
        except EditNotLoaded as exc:
            return {"not_loaded": str(exc)}
        except Exception as exc:  # noqa: BLE001 - the harness's own loading broke: its fault too, never the cell's finding
            return {"not_loaded": f"loading the edited case in the new process: {described(exc)}"}
    case, fn = built[key]
    if request.inputs is None:
        return {"loaded": [kernel_name(k) for k in case.kernels]}
    torch._dynamo.reset()
    counters.clear()
    code: list[str] = []
    GraphLowering.save_output_code = code.append  # type: ignore[assignment]
    inputs = [transfer.received(x, request.device) for x in torch.load(request.inputs, weights_only=False)]
    out = torch.compile(fn, **request.options)(*inputs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    single = not isinstance(out, (list, tuple))
    outputs = [out] if single else list(out)
    torch.save(([o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outputs],
                [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in inputs]), request.outputs)
    names = [kernel_name(k) for k in case.kernels]
    compiled = [n for n in names if any(f"def {n}(" in c for c in code)]
    stale = [n for n in compiled if not any(f"def {n}(" in c and marker(n) in c for c in code)]
    hits = {name: int(counters[group][name]) for group, name in (("aot_autograd", "autograd_cache_hit"), ("inductor", "fxgraph_cache_hit"),
                                                                  ("aot_autograd", "autograd_cache_miss"), ("inductor", "fxgraph_cache_miss"))}
    return {"stale": stale, "compiled": compiled, "hits": hits, "single": single}


def main() -> int:
    """The new process: each request answered (harness.processes.case_process.serve)."""
    autotune_timing.install()  # as the cell's own process times (before the case's module is imported)
    built: dict[str, Any] = {}

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        try:
            with profiling.profiled("new-process"):
                return _serve(EditRequest.of(request), built)
        except Exception as exc:  # noqa: BLE001 - what compiling and running the edited style meets is the cell's finding
            return {"error": f"{type(exc).__name__}: {first_line(exc)}"}

    return serve(answer)


if __name__ == "__main__":
    raise SystemExit(main())

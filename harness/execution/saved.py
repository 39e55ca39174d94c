"""What a compiled path saves, loaded and run in a fresh Python process.

The exported program (torch.export.save and load), the compile caches (torch.compiler.save_cache_artifacts and
load_cache_artifacts) and the precompiled function (aot_compile's save_compiled_function and
torch.compiler.load_compiled_function).

A serving process imports the library that defines its operators and kernels, then loads what was saved; so does
the new process here: it imports the case's module as harness.authoring.registry does, builds the cell's style there
(the operators it registers, the function the precompiled code runs in), and then loads the saved file. Nothing of the
cell's process is in it: no Dynamo cache, no compiled kernel, no operator but those its imports register. Its compile
caches are empty folders of its own where the row asks for it (the cache artifacts are then all it has).

What the new process meets loading or running the saved file is the cell's finding, at the stage it names (`load`,
`compile`, `run`). That it cannot find the case or build its style is the harness's (HarnessFault): the cell's own
process did both. So is a module the harness named that it cannot import there (a lone case file's name of its own,
which torch's loading may ask for where the cell's process held that module): no user's process meets that name.

The new process is `python -m harness.execution.saved`, one a cell, served and asked as harness.processes.case_process
says; the cell's side is `SavedInNewProcess`, one a dtype.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from typing import Any, Mapping

import torch
from torch._dynamo.utils import counters

from harness.authoring import registry
from harness.authoring.case import Case
from harness.execution import call_stage, transfer
from harness.execution import wrapping as wrappings
from harness.execution.blame import harness_named_module
from harness.execution.paths import saving
from harness.model.columns import Wrapping
from harness.model.errors import CaseError, HarnessError, described, first_line
from harness.model.outcome import HarnessFault, Stage, StageFailure
from harness.processes import autotune_timing, profiling
from harness.processes.case_process import CaseProcess, serve
from harness.processes.helper_process import CellProcesses

LOAD_TIMEOUT_S = 600.0

# What the new process does with the saved file, by task: each is one function of `_LOADERS` below.
PROGRAM, CACHES, PRECOMPILED = "exported program", "cache artifacts", "precompiled function"


class NotServed(HarnessError):
    """The new process could not find the case in its module or build its style, or could not import a module the
    harness named (harness.execution.blame.harness_named_module) where it loaded or ran what was saved."""


class SavedRunFailed(HarnessError):
    """What the new process met loading, compiling or running what was saved: the cell's finding, its first line."""


@dataclasses.dataclass(frozen=True)
class Request:
    """One request to the new process: the case (its name, its module as the registry loads it, the folder its package
    imports from, the name the cell's process imported it under: registry.Location) and style; the saved file and the
    task; with `inputs` (a file torch.save wrote), the call to make on `device`, its outputs written to `outputs`."""

    case: str
    case_module: str
    root: str | None
    wrapping: str
    task: str
    saved: str
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    inputs: str | None = None
    outputs: str | None = None
    device: str | None = None
    imported_as: str | None = None


def _new_process(workdir: str, fresh_caches: bool) -> CaseProcess:
    """The new process of one cell. `fresh_caches` gives it compile caches of its own, empty: what another machine has."""
    env = {**os.environ, "PYTHONPATH": registry.search_path()}
    if fresh_caches:
        caches = tempfile.mkdtemp(prefix="saved-caches-", dir=workdir)
        env.update(TORCHINDUCTOR_CACHE_DIR=os.path.join(caches, "inductor"), TRITON_CACHE_DIR=os.path.join(caches, "triton"))
    return CaseProcess("harness.execution.saved", workdir, prefix="saved-", failure=SavedRunFailed, env=env)


class SavedInNewProcess:
    """The cell's artifact on a row that saves, for one dtype: `load()` has the cell's new process build the style and
    load the saved file; each call runs it there on the call's inputs. `degradations` holds what a passing call lost
    silently (cache artifacts the new process did not use)."""

    def __init__(self, case: Case, wrapping: str, task: str, saved: str, workdir: str, processes: CellProcesses,
                 options: Mapping[str, Any] | None = None):
        try:
            where = registry.location(case)
        except CaseError as exc:
            raise HarnessFault(Stage.WRAP, NotServed(str(exc))) from exc
        self.base = dict(case=case.name, case_module=where.module, root=where.root, imported_as=where.imported_as, wrapping=wrapping,
                         task=task, saved=saved, options=dict(options or {}))
        self.task, self.workdir, self.processes = task, workdir, processes
        self.calls = 0
        self.degradations: list[str] = []

    def load(self) -> None:
        """The style built and the saved file loaded in the new process; a failure to load it is the cell's, at `load`."""
        self._ask({})

    def _process(self) -> CaseProcess:
        process = self.processes.saved
        if not isinstance(process, CaseProcess) or not process.alive():
            try:
                process = self.processes.saved = _new_process(self.workdir, fresh_caches=self.task == CACHES)
            except Exception as exc:  # noqa: BLE001 - starting a Python process is the harness's own work
                raise HarnessFault(Stage.LOAD, exc) from exc
        return process

    def _ask(self, fields: dict[str, Any]) -> dict[str, Any]:
        process = self._process()
        self.calls += 1
        try:
            report = process.ask(dataclasses.asdict(Request(**self.base, **fields)), timeout_s=LOAD_TIMEOUT_S)
        except SavedRunFailed as exc:  # it died or hung in torch's hands: loading, compiling or running
            raise StageFailure(Stage.RUN if fields else Stage.LOAD, exc) from exc
        if report.get("not_served"):  # at the stage it names, else building the style (the new process's first step)
            raise HarnessFault(Stage(report.get("stage", Stage.WRAP.value)), NotServed(report["not_served"]))
        if report.get("error"):
            raise StageFailure(Stage(report["stage"]), SavedRunFailed(report["error"]))
        return report

    def __call__(self, *inputs: Any) -> Any:
        name = f"{id(self):x}-call{self.calls}"
        sent, received = (os.path.join(self._process().dir, f"{name}.{part}") for part in ("in.pt", "out.pt"))
        torch.save([transfer.sent(x) for x in inputs], sent)
        runs_on = next((str(x.device) for x in inputs if isinstance(x, torch.Tensor)), "cpu")
        report = self._ask({"inputs": sent, "outputs": received, "device": runs_on})
        outputs, after = torch.load(received, weights_only=False)
        with torch.no_grad():
            for x, written in zip(inputs, after):
                if isinstance(x, torch.Tensor):
                    x.copy_(written)
        if report.get("missed"):
            note = f"the new process compiled anew instead of using the cache artifacts ({report['missed']})"
            if note not in self.degradations:
                self.degradations.append(note)
        device = inputs[0].device if inputs and isinstance(inputs[0], torch.Tensor) else "cpu"
        outputs = [None if o is None else o.to(device) for o in outputs]
        return outputs[0] if report.get("single") else outputs


# -- the new process ------------------------------------------------------------------------------


def _style(request: Request) -> tuple[Case, Any]:
    """The case, found as the registry finds it, and its style built: NotServed where either cannot be done."""
    try:
        case = registry.found(registry.Location(request.case_module, None, request.root, request.imported_as), request.case)
        return case, wrappings.build(case, Wrapping(request.wrapping))
    except Exception as exc:  # noqa: BLE001 - the cell's own process did both: whatever is raised is the harness's
        raise NotServed(f"the {request.wrapping} style of case {request.case} cannot be built in the new process: {described(exc)}") from exc


# What the new process does with the saved file, by task: the row's path (harness.execution.paths.saving).
_LOADERS = {PROGRAM: saving.load_program, CACHES: saving.load_caches, PRECOMPILED: saving.load_precompiled}


def _failed(stage: Stage, exc: Exception) -> dict[str, Any]:
    """The answer where loading or running what was saved raised: the cell's finding at `stage`, but where the new
    process could not import a module the harness named (a lone case file's name of its own, which only the cell's
    process had): that is the harness's, at the same stage."""
    named = harness_named_module(exc)
    if named is not None:
        return {"stage": stage.value, "not_served": f"the new process met a module the harness named: {named}"}
    return {"stage": stage.value, "error": f"{type(exc).__name__}: {first_line(exc)}"}


def _serve(request: Request, held: dict[str, Any]) -> dict[str, Any]:
    """One request: at the first, the style built and the saved file loaded (`held`); with inputs, one call."""
    key = json.dumps([request.case, request.case_module, request.wrapping, request.task, request.saved])
    if key not in held:
        try:
            _, fn = _style(request)
        except NotServed as exc:
            return {"not_served": str(exc)}
        counters.clear()
        try:
            held[key] = _LOADERS[request.task](request.saved, fn, request.options)
        except Exception as exc:  # noqa: BLE001 - what torch meets loading the saved file is the cell's finding
            return _failed(Stage.LOAD, exc)
    if request.inputs is None:
        return {"loaded": True}
    inputs = [transfer.received(x, request.device) for x in torch.load(request.inputs, weights_only=False)]
    try:
        out = held[key](*inputs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - the cell's finding: a compile error (cache artifacts) or a run error
        return _failed(call_stage.stage_of_call(exc) if request.task == CACHES else Stage.RUN, exc)
    single = not isinstance(out, (list, tuple))
    outputs = [out] if single else list(out)
    torch.save(([o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outputs],
                [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in inputs]), request.outputs)
    missed = ""
    if request.task == CACHES and not counters["inductor"]["fxgraph_cache_hit"]:
        missed = f"fxgraph_cache_miss {int(counters['inductor']['fxgraph_cache_miss'])}, fxgraph_cache_hit 0"
    return {"single": single, "missed": missed}


def main() -> int:
    """The new process: each request answered (harness.processes.case_process.serve)."""
    autotune_timing.install()  # as the cell's own process times (before the case's module is imported)
    held: dict[str, Any] = {}

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        try:
            with profiling.profiled("saved"):
                return _serve(Request(**request), held)
        except Exception as exc:  # noqa: BLE001 - reading the inputs, writing the outputs: the exchange, the harness's
            return {"not_served": f"the new process's exchange with the cell: {described(exc)}"}

    return serve(answer)


if __name__ == "__main__":
    raise SystemExit(main())

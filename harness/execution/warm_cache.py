"""Warm caches after a kernel edit: does a new process, compiling on the caches a first compile left, run the
kernel as it is now or as it was?

The cell's own process compiles the style first (with Inductor's and AOTAutograd's on-disk caches, as a user's
process does). Then every case kernel's source is edited (same name; one statement, `_tcm_edit_<kernel> = 2`,
put in front of its body's first statement on the same line, so no other line moves) and a new Python process
loads the edited source under the original file name and module, builds the same style, compiles it with the
same cache directories and runs it. Inductor puts a user kernel's source into the code it generates, and hands
every module it generates or loads from its cache to `GraphLowering.save_output_code`: a kernel whose compiled
code lacks the edit came from the cache, the kernel as it was. That is `wrong`, with the caches that hit.

The new process is `python -m harness.execution.warm_cache`, one a cell, taking each request's path on stdin; the cell's side
is `EditedInNewProcess` (one a dtype) and `NewProcess`.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import sys
import types
from typing import Any

import torch
from torch._dynamo.utils import counters
from torch._inductor.graph import GraphLowering

from harness.authoring import registry
from harness.authoring.case import Case, kernel_name
from harness.execution import wrapping as wrappings
from harness.execution.helper_process import HelperProcess
from harness.execution.wrapping import run_as_module
from harness.model.columns import Wrapping
from harness.model.errors import HarnessError, Mismatch, first_line

EDIT_TIMEOUT_S = 600.0


class KernelNotEditable(HarnessError):
    """The kernel's source cannot be edited in place (no file, or a body on its def's line)."""


class NewProcessFailure(HarnessError):
    """The new process could not build, compile or run the edited kernel: its error, first line."""


def marker(name: str) -> str:
    return f"_tcm_edit_{name}"


def _function(kernel: Any) -> Any:
    inner = kernel
    while not isinstance(inner, types.FunctionType) and hasattr(inner, "fn"):
        inner = inner.fn
    if not isinstance(inner, types.FunctionType):
        raise KernelNotEditable(f"{kernel!r}: no Python function under it")
    return inner


def edited_sources(kernels: tuple[Any, ...]) -> dict[str, dict[str, str]]:
    """{file: {"module": name, "text": edited source}} with each kernel's body edited in its own file."""
    by_file: dict[str, dict[str, Any]] = {}
    for kernel in kernels:
        fn = _function(kernel)
        path = fn.__code__.co_filename
        if not os.path.exists(path):
            raise KernelNotEditable(f"kernel {fn.__name__} has no source file ({path})")
        entry = by_file.setdefault(path, {"module": fn.__module__, "lines": open(path).read().splitlines(True), "edits": []})
        entry["edits"].append((fn.__name__, fn.__code__.co_firstlineno))
    out = {}
    for path, entry in by_file.items():
        lines = entry["lines"]
        tree = ast.parse("".join(lines))
        functions = {(node.name, min([node.lineno, *(d.lineno for d in node.decorator_list)])): node
                     for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        for name, first_lineno in entry["edits"]:
            node = functions.get((name, first_lineno)) or next((n for (fname, _), n in functions.items() if fname == name), None)
            if node is None:
                raise KernelNotEditable(f"kernel {name} not found in {path}")
            body = node.body[1:] if (isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant)
                                     and isinstance(node.body[0].value.value, str) and len(node.body) > 1) else node.body
            statement = body[0]
            line = lines[statement.lineno - 1]
            if statement.lineno == node.lineno or line[:statement.col_offset].strip():
                raise KernelNotEditable(f"kernel {name} in {path}: its first statement does not begin its line")
            lines[statement.lineno - 1] = f"{line[:statement.col_offset]}{marker(name)} = 2; {line[statement.col_offset:]}"
        out[path] = {"module": entry["module"], "text": "".join(lines)}
    return out


class NewProcess(HelperProcess):
    """The new process of one warm-cache cell, started at the cell's first call: it loads the edited kernels and
    builds the style once, then compiles and runs each request (one per dtype) on the warm caches, each compile
    its first in that process since Dynamo's caches are reset before it. One process a cell, not one a dtype:
    torch's import and the case's loading are paid once."""

    def __init__(self, workdir: str):
        env = {**os.environ, "PYTHONPATH": registry.search_path()}
        super().__init__([sys.executable, "-m", "harness.execution.warm_cache"], workdir, prefix="warm-cache-",
                         who="the new process", failure=NewProcessFailure, env=env)

    def ask(self, request: str) -> None:
        """Send one request (a JSON file's path) and wait for its answer file; NewProcessFailure where the
        process dies or takes over EDIT_TIMEOUT_S."""
        self.send(request)
        self.answer(timeout_s=EDIT_TIMEOUT_S)  # "done": its stdout carries nothing else (main)


class EditedInNewProcess:
    """The cell's artifact on this row for one dtype: each call runs the edited kernel in the cell's new process
    (`session` keeps it for the cell's other dtypes) on the warm caches, and raises StaleKernel where the
    compiled code was the kernel as it was."""

    def __init__(self, case: Case, wrapping: str, compile_options: dict[str, Any], workdir: str, session: dict[str, Any]):
        self.case, self.wrapping, self.options = case, wrapping, dict(compile_options)
        self.sources = edited_sources(case.kernels)
        self.workdir, self.session = workdir, session
        self.calls = 0
        self.report: dict[str, Any] = {}

    def _process(self) -> NewProcess:
        process = self.session.get("warm-cache-process")
        if process is None or not process.alive():
            process = self.session["warm-cache-process"] = NewProcess(self.workdir)
        return process

    def __call__(self, *inputs: Any) -> Any:
        process = self._process()
        self.calls += 1
        name = f"{id(self):x}-{self.calls}"
        request = os.path.join(process.dir, f"{name}.request.json")
        sent, received, answer = (os.path.join(process.dir, f"{name}.{part}") for part in ("in.pt", "out.pt", "answer.json"))
        torch.save([x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in inputs], sent)
        with open(request, "w") as f:
            json.dump({"case": self.case.name, "launch_module": self.case.launch.__module__, "wrapping": self.wrapping,
                       "options": self.options, "sources": self.sources, "inputs": sent, "outputs": received, "answer": answer,
                       "device": next((str(x.device) for x in inputs if isinstance(x, torch.Tensor)), "cpu")}, f)
        process.ask(request)
        if not os.path.exists(answer):
            raise NewProcessFailure("the new process wrote no answer")
        with open(answer) as f:
            self.report = json.load(f)
        if self.report.get("error"):
            raise NewProcessFailure(self.report["error"])
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


def _load_edited(sources: dict[str, dict[str, str]]) -> None:
    for path, source in sources.items():
        run_as_module(source["module"], path, source["text"])


def _serve(request: dict[str, Any], built: dict[str, Any]) -> dict[str, Any]:
    """One request: the edited case and its style (loaded at the process's first request, kept in `built`),
    compiled afresh (Dynamo's caches reset; Inductor's and AOTAutograd's on disk, warm) on the request's inputs."""
    key = json.dumps([request["sources"], request["launch_module"], request["case"], request["wrapping"]], sort_keys=True)
    if key not in built:
        _load_edited(request["sources"])
        module = importlib.import_module(request["launch_module"])
        case = next((c for c in registry.cases_of(module, request["launch_module"]) if c.name == request["case"]), None)
        if case is None:
            return {"error": f"case {request['case']!r} not found in {request['launch_module']}"}
        built[key] = (case, wrappings.build(case, Wrapping(request["wrapping"])))
    case, fn = built[key]
    torch._dynamo.reset()
    counters.clear()
    code: list[str] = []
    GraphLowering.save_output_code = code.append  # type: ignore[assignment]
    device = request["device"]
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in torch.load(request["inputs"], weights_only=False)]
    out = torch.compile(fn, **request["options"])(*inputs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    single = not isinstance(out, (list, tuple))
    outputs = [out] if single else list(out)
    torch.save(([o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outputs],
                [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in inputs]), request["outputs"])
    names = [kernel_name(k) for k in case.kernels]
    compiled = [n for n in names if any(f"def {n}(" in c for c in code)]
    stale = [n for n in compiled if not any(f"def {n}(" in c and marker(n) in c for c in code)]
    hits = {name: int(counters[group][name]) for group, name in (("aot_autograd", "autograd_cache_hit"), ("inductor", "fxgraph_cache_hit"),
                                                                  ("aot_autograd", "autograd_cache_miss"), ("inductor", "fxgraph_cache_miss"))}
    return {"stale": stale, "compiled": compiled, "hits": hits, "single": single}


def main() -> int:
    """The new process: a request's path a line on stdin; its answer in the request's answer file, then "done"."""
    built: dict[str, Any] = {}
    # What torch, Triton or the case print goes to stderr: stdout carries only the answers.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        with open(line.strip()) as f:
            request = json.load(f)
        try:
            answer = _serve(request, built)
        except Exception as exc:  # noqa: BLE001 - anything the new process meets is the cell's finding
            answer = {"error": f"{type(exc).__name__}: {first_line(exc)}"}
        with open(request["answer"], "w") as f:
            json.dump(answer, f)
        print("done", file=answers, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

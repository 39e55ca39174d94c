"""A standalone reproducer for one cell. A Python file that wraps the case's kernel in the cell's style and runs
the cell's path on its smallest failing example, written as a user writes it.

The file imports torch, triton and the case's own module, nothing of the harness's machinery: it holds, as text, the
chart's own definitions of the style (harness.execution.style_source), of the row's path (harness.execution.path_source:
the path modules printed as the cell ran them), of the inputs' copies and of the stage rule, and adds the comparison
with the reference and its last line, so the error it prints can be pasted into an upstream issue. Because none of the
harness runs, it also checks the chart: a reproducer that passes where the cell failed points at the harness.

Its last line says what happened, in one form a program can read (`outcome_of` parses it):
`FAILED @<stage>: <error kind>: <first line>`, `WRONG @run: <what differs>`, or `PASSED: ...`.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from types import ModuleType
from typing import Any

import torch

from harness.authoring import registry
from harness.authoring.case import Case, Example
from harness.authoring.launcher import takes_namespace
from harness.execution.path_source import PathWriter
from harness.execution import source_text
from harness.execution.source_text import Source, embedded
from harness.execution.style_source import Names, StyleWriter
from harness.model.cell import Cell
from harness.model.errors import UsageError
from harness.model.rows import Examples

# The line a reproducer ends with, and what a program reads from it.
LAST_LINE = re.compile(r"^(?P<verdict>FAILED|WRONG|PASSED)(?: @(?P<stage>\w+))?: (?P<rest>.*)$")


@dataclasses.dataclass(frozen=True)
class Reproduced:
    """What a reproducer's last line says."""

    verdict: str  # "FAILED", "WRONG" or "PASSED"
    stage: str | None
    error_type: str | None
    message: str


def outcome_of(output: str) -> Reproduced | None:
    """The verdict of a reproducer's output (its last line of that form), or None where it printed none (it
    crashed, or was killed)."""
    for line in reversed(output.strip().splitlines()):
        found = LAST_LINE.match(line.strip())
        if not found:
            continue
        verdict, stage, rest = found.group("verdict"), found.group("stage") or None, found.group("rest")
        if verdict == "FAILED":
            kind, _, message = rest.partition(": ")
            return Reproduced(verdict, stage, kind.removesuffix(":"), message)  # an error with no message ends its kind with ":"
        return Reproduced(verdict, stage if verdict == "WRONG" else None, None, rest)
    return None


_EXAMPLE = re.compile(r"^(?P<dtype>\w+) shape=(?P<shape>\([^)]*\))(?P<drawn>.*) seed=(?P<seed>\d+)$")


def parse_example(text: str | None, case: Case) -> Example | None:
    """The Example a result recorded (`str(Example)`), or None where it recorded none or another form."""
    found = _EXAMPLE.match(text or "")
    if not found:
        return None
    dtype = getattr(torch, found.group("dtype"))
    shape = tuple(int(s) for s in re.findall(r"\d+", found.group("shape")))
    scalars, absent = [], set()
    for name, value in re.findall(r" (\w+)=(\S+)", found.group("drawn")):
        if value == "None" and name in case.optional_inputs:
            absent.add(name)
        else:
            scalars.append((name, _literal(value)))
    return Example(dtype, shape, int(found.group("seed")), tuple(scalars), frozenset(absent))


def _literal(text: str) -> Any:
    import ast

    return ast.literal_eval(text)


def _module_of(case: Case) -> ModuleType:
    module = registry.module_of(case.module) or inspect.getmodule(case.launch)
    if module is None:
        raise UsageError(f"case {case.name!r}: cannot find the module that defines it")
    return module


def _import_lines(module: ModuleType) -> list[str]:
    """How a user's script imports the case's module: by its name, with the folder it is found from first on
    sys.path where an installed package does not already give it."""
    name = module.__name__
    path = getattr(module, "__file__", None)
    lines = []
    if name == "__main__":
        raise UsageError("a case defined in the script being run cannot be imported by name: put it in a module")
    lone = registry.lone_file(module)
    if lone:  # a lone case file: by its path, under the name the matrix gave it, its folder first as the matrix puts it
        return [f"sys.path.insert(0, {os.path.dirname(lone)!r})  # the case file's folder: the modules beside it import",
                "import importlib.util",
                f"spec = importlib.util.spec_from_file_location({name!r}, {lone!r})",
                "case_module = importlib.util.module_from_spec(spec)",
                "sys.modules[spec.name] = case_module",
                "spec.loader.exec_module(case_module)"]
    if path:
        root = os.path.dirname(os.path.abspath(path))
        for _ in name.split(".")[1:]:
            root = os.path.dirname(root)
        if os.path.exists(os.path.join(root, name.split(".")[0])) or os.path.exists(os.path.join(root, name + ".py")):
            lines.append(f"sys.path.insert(0, {root!r})  # where the case's module is found")
    lines.append(f"import {name} as case_module")
    return lines


_PRELUDE = '''
@contextlib.contextmanager
def stage(name, called=False):
    """Run one stage of the path; an exception ends the script, named with its stage. In a call of the path's artifact
    (`called`), as the chart names it: a compilation error, or one raised while Dynamo traced, fails at compile; any
    other at run."""
    try:
        yield
    except Wrong as wrong:
        print(f"\\nWRONG @{name}: {wrong}")
        sys.exit(1)
    except Exception as error:
        if torch.cuda.is_available():  # a kernel's fault is reported late: it is the error, not what came after it
            try:
                torch.cuda.synchronize()
            except Exception as fault:
                error = fault
        if called:
            name = "compile" if isinstance(error, compile_stage_exception_types()) or _raised_while_tracing(error) else "run"
        traceback.print_exc()
        kind = type(error).__qualname__ if type(error).__module__ == "builtins" else f"{type(error).__module__}.{type(error).__qualname__}"
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(f"\\nFAILED @{name}: {kind}: {first}")
        sys.exit(1)


class Wrong(AssertionError):
    """The path ran, and its results differ from the plain PyTorch reference's."""


def check(actual, expected, names, atol, rtol):
    if len(actual) != len(expected):
        raise Wrong(f"the number of outputs: {len(actual)} vs {len(expected)}")
    for name, a, e in zip(names, actual, expected):
        if isinstance(e, torch.Tensor) and a is None:
            raise Wrong(f"{name} is missing (None) where the reference has one: cut off from the autograd graph")
        if not isinstance(e, torch.Tensor) or e is None:
            if a != e:
                raise Wrong(f"{name}: {a!r} where the reference has {e!r}")
            continue
        if e.dim() == 0 and not e.is_floating_point():
            if int(a) != int(e):
                raise Wrong(f"{name}: {int(a)} where the reference has {int(e)}")
            continue
        a, e = a.detach().cpu(), e.detach().cpu()
        if e.is_floating_point():
            nan = int((a.isnan() & ~e.isnan()).sum())
            if nan:
                raise Wrong(f"{name}: {nan} of {e.numel()} elements NaN where the reference has a number (never written?)")
        try:
            torch.testing.assert_close(a, e, atol=atol, rtol=rtol, equal_nan=True, check_stride=False)
        except AssertionError as differs:
            raise Wrong(f"{name} differs from the reference: " + " ".join(str(differs).split())[:300]) from None

'''


def _inputs(case: Case) -> str:
    """make_inputs, as the chart draws a cell's inputs."""
    params = [p.name for p in case.input_parameters()]
    scalars = ", ".join(repr(name) for name in case.scalars)
    return f'''
def make_inputs(dtype, shape, seed, scalars=None, absent=()):
    """The case's inputs as the chart drew them: make_inputs from a seeded generator, then the scalars."""
    tensors = case.make_inputs(shape, dtype, DEVICE, torch.Generator().manual_seed(seed))
    tensors = tuple(None if name in absent else x for name, x in zip({params!r}, tensors))
    scalars = {{**case.example_scalars, **(scalars or {{}})}}
    return (*tensors, *(scalars[name] for name in ({scalars}{"," if len(case.scalars) == 1 else ""})))'''


def write(cell: Cell, case: Case, example_text: str | None, recorded: str, environment: str, device: str,
          interpreter: bool = False, ran: list[str] | tuple[str, ...] = ()) -> str:
    """The reproducer's source for `cell` of `case`. `example_text`: the smallest failing example the result
    recorded (None: the example the row traces with); `recorded`: the outcome and error the chart recorded;
    `environment`: the versions and device it was recorded on; `device`: the device to run on ("cuda");
    `interpreter`: run the kernels in Triton's CPU interpreter, as a run without a GPU does; `ran`: the inputs the
    cell made, in order (CellResult.ran), replayed before the smallest failing one on a row that compiles per call."""
    row, style = cell.row, cell.wrapping
    module = _module_of(case)
    names = Names(case, module)
    spec = row.spec
    device = spec.device or device
    traced = Example(case.dtypes[0], case.example_shape, seed=0)  # the chart builds the first dtype's path first
    example = parse_example(example_text, case)
    replayed = [e for e in (parse_example(text, case) for text in ran) if e is not None] if spec.examples is Examples.DRAWN else []
    if example is not None and not replayed:  # nothing before the failing example: its dtype's path alone
        traced = dataclasses.replace(traced, dtype=example.dtype)
    if spec.examples is not Examples.DRAWN or example is None:
        example = example if spec.examples is Examples.BATCH and example is not None else traced
    source = Source(imports={"contextlib", "sys", "traceback", "math"})
    source.add(f'''"""Reproduces {cell.id}: {recorded}.

Recorded on {environment}.
The case {case.name!r} ({row.spec.title}; {style.title}), written as a user writes it: only torch, triton
and the case's module are imported. Run it with `python {{this file}}`; its last line says what happened.
Written by `python -m harness repro {cell.id}`.
"""''')
    source.add(f'DEVICE = "{device}"\ncase = {names.case_expr()}\n\n'
               + embedded(_PRELUDE.strip("\n"), source_text.copies_source(), source_text.flatten_source(), source_text.stage_rule_source()))
    source.add(_inputs(case))
    backward = case.backward
    if takes_namespace(case.launch) or (backward is not None and backward.kernels and takes_namespace(backward.launch)):
        source.imports.add("types")
        source.add(source_text.poison_source())
    StyleWriter(case, names, style, row, source).write()
    PathWriter(case, style, row, source).write(traced, example, replayed)
    interpret = ""
    if interpreter:  # Triton chooses its interpreter when it is imported: before that
        source.imports.add("os")
        interpret = 'os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton\'s CPU interpreter, as recorded\n\n'
    imports = "\n".join(f"import {m}" for m in sorted(source.imports))
    # typing's names: the annotations of the chart's own definitions the file embeds
    head = (imports + "\nfrom typing import Any, Callable\n\n" + interpret
            + "import torch\n\n" + (source.served + "\n\n\n" if source.served else "") + "import triton\n\n"
            + "\n".join(_import_lines(module)))
    sections = source.sections[:1] + [head] + source.sections[1:]
    return "\n\n\n".join(sections) + "\n"



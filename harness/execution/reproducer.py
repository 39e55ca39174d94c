"""A standalone reproducer for one cell. A Python file that wraps the case's kernel in the cell's style and runs
the cell's path on its smallest failing example, written as a user writes it.

The file imports torch, triton and the case's own module, nothing of the harness's machinery: it holds, as text,
the chart's own definitions of the style (harness.execution.wrapping's sources of the autograd.Function, of the
operators' bodies, each kernel named in a `wrap_triton(kernel)` call, and of their autograd, run as the chart runs
them; the poisoned allocators; the launcher's rebinding) and of the checks (numerics.flatten, training.step, the
stage rule) and of the row's path (harness.execution.paths: torch.compile, export with the batch dynamic,
AOTInductor's package, printed as the cell ran them), and writes out the rest of what harness.execution.builders does
on the row, so the error it prints can be pasted into an upstream issue. Because none of the harness runs, it also checks the chart: a
reproducer that passes where the cell failed points at the harness.

Its last line says what happened, in one form a program can read (`outcome_of` parses it):
`FAILED @<stage>: <error kind>: <first line>`, `WRONG @run: <what differs>`, or `PASSED: ...`.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import typing
from types import ModuleType
from typing import Any

import torch

from harness.authoring import registry
from harness.authoring.case import Case, Example, dtype_name, kernel_name
from harness.authoring.launcher import takes_namespace
from harness.execution import paths
from harness.execution.paths import serving
from harness.model.cell import Cell
from harness.model.columns import OP_NAMESPACE, OPERATOR_STYLES, Wrapping
from harness.model.errors import UsageError
from harness.model.rows import Examples, Kind, Row
from harness.processes import runner_template

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


class _Names:
    """How the file names the case's objects: a module attribute where the case's module holds it, else the
    case's own field (case.launch, case.kernels[0])."""

    def __init__(self, case: Case, module: ModuleType):
        self.case, self.module = case, module
        self.attrs = {id(v): k for k, v in vars(module).items() if not k.startswith("__")}

    def of(self, value: Any, fallback: str) -> str:
        attr = self.attrs.get(id(value))
        return f"case_module.{attr}" if attr else fallback

    def case_expr(self) -> str:
        for name, value in vars(self.module).items():
            if isinstance(value, Case) and value.name == self.case.name:
                return f"case_module.{name}"
            if isinstance(value, (list, tuple)) and any(isinstance(c, Case) and c.name == self.case.name for c in value):
                return f'next(c for c in case_module.{name} if c.name == "{self.case.name}")'
        raise UsageError(f"case {self.case.name!r}: its module {self.module.__name__} holds no Case of that name")

    def kernel(self, kernels: tuple[Any, ...], index: int, field: str) -> str:
        return self.of(kernels[index], f"case.{field}[{index}]")


def _annotation(annotation: Any) -> str:
    """An annotation as source, for torch.library to infer the schema from."""
    if annotation is inspect.Parameter.empty or annotation is inspect.Signature.empty:
        return ""
    if annotation is torch.Tensor:
        return "torch.Tensor"
    if annotation is type(None) or annotation is None:
        return "None"
    if isinstance(annotation, type) and annotation.__module__ == "builtins":
        return annotation.__name__
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        present = [a for a in args if a is not type(None)]
        if len(present) == 1 and len(args) == 2:
            return f"typing.Optional[{_annotation(present[0])}]"
    if origin in (list, tuple, typing.Sequence):
        name = {list: "list", tuple: "tuple"}.get(origin, "typing.Sequence")
        return f"{name}[{', '.join('...' if a is Ellipsis else _annotation(a) for a in args)}]"
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def _signature(signature: inspect.Signature) -> tuple[str, str]:
    """(parameters with annotations, return annotation) as source."""
    params = ", ".join(f"{p.name}: {_annotation(p.annotation)}" if _annotation(p.annotation) else p.name
                       for p in signature.parameters.values())
    returns = _annotation(signature.return_annotation)
    return params, f" -> {returns}" if returns else ""


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


def _rebinding() -> str:
    """How the chart calls a globals-form launcher with its kernels replaced (harness.authoring.launcher.rebound), as
    source: copies of the launcher and of the functions and modules it reads, each reading the replacement."""
    from harness.authoring import launcher

    return _embedded("import inspect\nimport types\nfrom typing import Any, Callable, Mapping",
                     f"_NOT_REBOUND = {launcher._NOT_REBOUND!r}\nMAX_DEPTH = {launcher.MAX_DEPTH!r}",
                     launcher._global_names, launcher._Rebinder, launcher.rebound)


def _stage_of_a_call() -> str:
    """The chart's own rule for the stage at which an artifact's call fails (harness.execution.execute), as source."""
    from harness.execution import call_stage

    return _embedded("import torch._dynamo.exc as dynamo_exc\nimport torch._inductor.exc as inductor_exc",
                     call_stage.compile_stage_exception_types, f"_TRACING_FILES = {call_stage._TRACING_FILES!r}",
                     call_stage._raised_while_tracing)


def _embedded(*parts: Any) -> str:
    """Harness definitions as source (a string part as it is): the reproducer runs the chart's own code, not a copy."""
    return "\n\n\n".join(part if isinstance(part, str) else inspect.getsource(part).strip() for part in parts)


def _copies() -> str:
    """How the chart copies a cell's inputs (harness.execution.transfer.copied: a view stays a view of its base), as source."""
    from harness.execution import transfer

    return _embedded("import dataclasses", transfer.with_its_strides, transfer._viewed_base, transfer._dense, transfer.copied,
                     transfer.SentView, transfer.sent, transfer.received,
                     'def clone(inputs):\n    """Copies as the chart makes them: their strides, a view the same view of a copy of its base."""\n'
                     "    return tuple(copied(x, x.device) if isinstance(x, torch.Tensor) else x for x in inputs)")


def _flatten() -> str:
    """How the chart lists a call's outputs (harness.execution.numerics.flatten), as source."""
    from harness.execution import numerics

    return _embedded(numerics.flatten)


def _poison() -> str:
    """The chart's poisoned allocators (harness.execution.poison), as source."""
    from harness.execution import poison

    return inspect.getsource(poison)


@dataclasses.dataclass
class _Source:
    """The file, assembled in sections."""

    imports: set[str] = dataclasses.field(default_factory=lambda: {"contextlib", "sys", "traceback"})
    sections: list[str] = dataclasses.field(default_factory=list)
    served: str = ""  # what the file runs as a new process that imports torch alone: right after torch's import

    def add(self, text: str) -> None:
        self.sections.append(text.strip("\n"))


def write(cell: Cell, case: Case, example_text: str | None, recorded: str, environment: str, device: str,
          interpreter: bool = False, ran: list[str] | tuple[str, ...] = ()) -> str:
    """The reproducer's source for `cell` of `case`. `example_text`: the smallest failing example the result
    recorded (None: the example the row traces with); `recorded`: the outcome and error the chart recorded;
    `environment`: the versions and device it was recorded on; `device`: the device to run on ("cuda");
    `interpreter`: run the kernels in Triton's CPU interpreter, as a run without a GPU does; `ran`: the inputs the
    cell made, in order (CellResult.ran), replayed before the smallest failing one on a row that compiles per call."""
    row, style = cell.row, cell.wrapping
    module = _module_of(case)
    names = _Names(case, module)
    spec = row.spec
    device = spec.device or device
    traced = Example(case.dtypes[0], case.example_shape, seed=0)  # the chart builds the first dtype's path first
    example = parse_example(example_text, case)
    replayed = [e for e in (parse_example(text, case) for text in ran) if e is not None] if spec.examples is Examples.DRAWN else []
    if example is not None and not replayed:  # nothing before the failing example: its dtype's path alone
        traced = dataclasses.replace(traced, dtype=example.dtype)
    if spec.examples is not Examples.DRAWN or example is None:
        example = example if spec.examples is Examples.BATCH and example is not None else traced
    source = _Source(imports={"contextlib", "sys", "traceback", "math"})
    source.add(f'''"""Reproduces {cell.id}: {recorded}.

Recorded on {environment}.
The case {case.name!r} ({row.spec.title}; {style.title}), written as a user writes it: only torch, triton
and the case's module are imported. Run it with `python {{this file}}`; its last line says what happened.
Written by `python -m harness repro {cell.id}`.
"""''')
    body = _Body(case, names, style, row, device, source)
    body.write(traced, example, replayed)
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


def _replay(examples: list[Example], path: str) -> list[str]:
    """The inputs the cell checked before its smallest failing one, run in the same order: what the path compiled and
    cached for each (a recompile, a cache entry) can decide what it does with the next."""
    if not examples:
        return []
    rows = ",\n".join(f"    (torch.{dtype_name(e.dtype)}, {e.shape!r}, {e.seed}, {dict(e.scalars)!r}, {tuple(sorted(e.absent))!r})"
                       for e in examples)
    settings = [f"if hasattr(torch._dynamo.config, {name!r}):\n    torch._dynamo.config.{name} = {value!r}"
                for name, value in runner_template.DYNAMO_FOR_MANY_EXAMPLES.items()]
    return ["# The inputs the cell checked, in the order it checked them, before its smallest failing one; Dynamo set as the",
            "# cell's process was for so many calls of one compiled function (past its default recompile limit of 8 it",
            "# would run the rest eagerly, or, with fullgraph=True, fail).",
            *settings, f"RAN = [\n{rows},\n]", "for dtype, shape, seed, scalars, absent in RAN:",
            f"    run(make_inputs(dtype, shape, seed, scalars, absent), {path})"]


class _Body:
    def __init__(self, case: Case, names: _Names, style: Wrapping, row: Row, device: str, source: _Source):
        self.case, self.names, self.style, self.row, self.device, self.source = case, names, style, row, device, source
        self.params = [p.name for p in case.input_parameters()]
        self.args = ", ".join(self.params)
        # What the backward is given, by name (Backward.takes): the names the chart's generated backwards have in scope.
        self.takes = ", ".join(case.backward_takes) if case.backward is not None else ""
        self.namespaces: dict[str, str] = {}  # the kernel namespaces the plain calls use, by name
        self.rebinding = False  # whether the file holds the rebinding of a globals-form launcher (rebound)
        self.generated = False  # whether it holds the chart's way of running a generated source (run_as_module)
        self.namespace_maker = False  # whether it holds wrapping.launcher_namespace

    # -- the pieces

    def write(self, traced: Example, example: Example, replayed: list[Example]) -> None:
        self.source.add(f'DEVICE = "{self.device}"\ncase = {self.names.case_expr()}\n\n'
                        + _embedded(_PRELUDE.strip("\n"), _copies(), _flatten(), _stage_of_a_call()))
        self.inputs()
        backward = self.case.backward
        if takes_namespace(self.case.launch) or (backward is not None and backward.kernels and takes_namespace(backward.launch)):
            self.source.imports.add("types")
            self.source.add(_poison())
        at = len(self.source.sections)
        self.wrapping()
        if self.namespaces:
            self.source.sections.insert(at, "\n".join(self.namespaces.values()))
        self.path(traced, example, replayed)

    def inputs(self) -> None:
        scalars = ", ".join(repr(name) for name in self.case.scalars)
        self.source.add(f'''
def make_inputs(dtype, shape, seed, scalars=None, absent=()):
    """The case's inputs as the chart drew them: make_inputs from a seeded generator, then the scalars."""
    tensors = case.make_inputs(shape, dtype, DEVICE, torch.Generator().manual_seed(seed))
    tensors = tuple(None if name in absent else x for name, x in zip({self.params!r}, tensors))
    scalars = {{**case.example_scalars, **(scalars or {{}})}}
    return (*tensors, *(scalars[name] for name in ({scalars}{"," if len(self.case.scalars) == 1 else ""})))''')

    def _namespace(self, kernels: tuple[Any, ...], field: str, wrap: bool) -> str:
        entries = []
        for i, kernel in enumerate(kernels):
            ref = self.names.kernel(kernels, i, field)
            entries.append(f"{kernel_name(kernel)}={'wrap_triton(' + ref + ')' if wrap else ref}")
        return f"types.SimpleNamespace({', '.join(entries + ['empty_like=empty_like', 'empty=empty'])})"

    def _plain_namespace(self, kernels: tuple[Any, ...], field: str) -> str:
        """The name of the namespace of the kernels as they are, built once (as wrapping.plain_call builds it)."""
        name = "k" if field == "kernels" else "k_backward"
        if name not in self.namespaces:
            self.namespaces[name] = f"{name} = {self._namespace(kernels, field, False)}"
        return name

    def _launch_call(self, launch: Any, kernels: tuple[Any, ...], field: str, args: str, wrap: bool, launch_expr: str) -> str:
        """The source of one call of a launcher with its kernels (wrapped with wrap_triton where `wrap`, in the call,
        as a triton_op's body wraps them; else the namespace built once, outside what the compilers trace)."""
        if takes_namespace(launch):
            if wrap:
                return f"{launch_expr}({self._namespace(kernels, field, wrap)}, {args})"
            return f"{launch_expr}({self._plain_namespace(kernels, field)}, {args})"
        if not wrap:
            return f"{launch_expr}({args})"
        # A launcher that calls its kernels as module globals: a copy of it, and of the functions it calls, reading
        # the wrapped kernels where they read the kernels, as the chart's triton_op calls it (harness.authoring.launcher).
        if not self.rebinding:
            self.rebinding = True
            self.source.add(_rebinding())
        bound = ", ".join(f"id({ref}): wrap_triton({ref})" for ref in (self.names.kernel(kernels, i, field) for i in range(len(kernels))))
        return f"rebound({launch_expr}, {{{bound}}})({args})"

    def forward_call(self, wrap: bool = False) -> str:
        return self._launch_call(self.case.launch, self.case.kernels, "kernels", self.args, wrap,
                                 self.names.of(self.case.launch, "case.launch"))

    def backward_call(self, wrap: bool = False) -> str:
        backward = self.case.backward
        assert backward is not None
        launch_expr = self.names.of(backward.launch, "case.backward.launch")
        args = self.takes
        if not backward.kernels:
            return f"{launch_expr}(None, {args})" if takes_namespace(backward.launch) else f"{launch_expr}({args})"
        return self._launch_call(backward.launch, backward.kernels, "backward.kernels", args, wrap, launch_expr)

    def wrapping(self) -> None:
        from harness.execution.wrapping import call_returning_outputs

        style, case = self.style, self.case
        if style not in (Wrapping.CONTROL, Wrapping.SHIPPED):
            self.source.add(f"def launch({self.args}):\n    return {self.forward_call()}")
        if style is Wrapping.CONTROL:
            callee = self.names.of(case.reference, "case.reference")
        elif style is Wrapping.SHIPPED:
            callee = "case.shipped"
        elif style is Wrapping.RAW:
            callee = "launch"
        elif style is Wrapping.RAW_AUTOGRAD:
            callee = self._function()
        else:
            callee = self._operator()
        call = f"{callee}({self.args})"
        all_results = style in (Wrapping.CONTROL, Wrapping.RAW, *OPERATOR_STYLES)  # what gives every result of a tuple-returning launcher
        self.source.add(f'''
def program({self.args}):
    """What the path runs: the wrapped kernel called as a model calls it."""
    {call_returning_outputs(case, call) if all_results else "return " + call}''')

    def _function(self) -> str:
        """The chart's own autograd.Function (wrapping.function_source), its free names bound as the chart binds them."""
        from harness.execution import wrapping

        case = self.case
        if case.backward:
            backward = f"def backward_of({self.takes}):\n    return {self.backward_call()}"
        else:
            backward = f"def backward_of(*args):\n    raise NotImplementedError({wrapping.no_backward_message(case)!r})"
        self.source.add(f"launcher = {self.names.of(case.launch, 'case.launch')}\n\n\n{backward}")
        self.source.add(_embedded(wrapping._as_tuple, wrapping._input_grads))
        self.source.add(wrapping.function_source(case))
        return f"{wrapping.function_name(case)}.apply"

    def _operator(self) -> str:
        """The operator as the chart registers it (wrapping._register_operator): its body, fake, CPU kernel, autograd
        (wherever the case has a backward, on every row) and flop formula."""
        case, style = self.case, self.style
        cpu_fallback = self.row is Row.CPU_FALLBACK
        name = f"{case.name}_{style.value}" + ("_cpu_fallback" if cpu_fallback else "")
        self._operator_body(name, case.launch, case.kernels, "kernels", "case.signature", tuple(sorted(case.mutates)))
        if style is Wrapping.CUSTOM_OP:
            self.source.add(f"def _fake(*inputs):\n    return case.reference(*inputs)\n\n\n"
                            f"_fake.__signature__ = case.signature\n{name}.register_fake(_fake)")
        if case.backward is not None:
            self._autograd(name)
        if case.flops is not None and not cpu_fallback:
            self.source.add(f'''
from torch.utils.flop_counter import register_flop_formula


@register_flop_formula(torch.ops.{OP_NAMESPACE}.{name})
def _(*shapes, out_shape=None, **kwargs):
    return case.flops(*shapes)''')
        if cpu_fallback:
            self.source.add(f"def _on_cpu(*inputs):\n    return case.reference(*inputs)\n\n\n"
                            f"_on_cpu.__signature__ = case.signature\n{name}.register_kernel(\"cpu\")(_on_cpu)")
        return f"torch.ops.{OP_NAMESPACE}.{name}"

    def _operator_body(self, name: str, launch: Any, kernels: tuple[Any, ...], field: str, signature: str,
                       mutates: tuple[str, ...]) -> None:
        """The chart's own body (wrapping.operator_body_source), run as the chart runs it, in a module of its own
        (wrapping._generated_module), its free names bound as the chart binds them; then registered."""
        from harness.execution import wrapping

        if not self.generated:
            self.generated = True
            self.source.imports |= {"linecache", "types"}
            self.source.add(_embedded(wrapping.run_as_module, wrapping._generated_module))
        bound = {"wrap_triton": "torch.library.wrap_triton", "_tcm_launch": self.names.of(launch, f"case.{field.replace('kernels', 'launch')}")}
        if takes_namespace(launch):
            bound["_tcm_k"] = self._plain_namespace(kernels, field)
            if not self.namespace_maker:
                self.namespace_maker = True
                self.source.add(_embedded(wrapping.launcher_namespace))
            bound["_tcm_namespace"] = "launcher_namespace"
        else:
            if not self.rebinding:
                self.rebinding = True
                self.source.add(_rebinding())
            bound["_tcm_rebound"] = "rebound"
        bound.update({kernel_name(k): self.names.kernel(kernels, i, field) for i, k in enumerate(kernels)})
        source = wrapping.operator_body_source(name, self.style, launch, kernels).strip("\n")
        title = wrapping.operator_body_title(name, self.style)
        self.source.add(f'{name} = _generated_module({name!r}, """\n{source}\n""", {title!r},\n    '
                        + ", ".join(f"{k}={v}" for k, v in bound.items()) + f")[{name!r}]\n"
                        f"{name}.__signature__ = {signature}\n"
                        f'{name} = torch.library.{self.style.value}("{OP_NAMESPACE}::{name}", {name}, mutates_args={mutates!r})')

    def _autograd(self, name: str) -> None:
        from harness.execution import wrapping

        case, style = self.case, self.style
        assert case.backward is not None
        backward = self.backward_call()
        if case.backward.kernels:  # the backward's kernels get their own operator of the same style
            back_name = f"{case.name}_backward_{style.value}"
            self._operator_body(back_name, case.backward.launch, case.backward.kernels, "backward.kernels", "case.backward_signature", ())
            if style is Wrapping.CUSTOM_OP:
                self.source.add(_embedded(wrapping.backward_fake))
                self.source.add(f"def _backward_fake(*args):\n    return backward_fake({wrapping.fake_gradient_positions(case)!r}, *args)\n\n\n"
                                f"_backward_fake.__signature__ = case.backward_signature\n{back_name}.register_fake(_backward_fake)")
            backward = f"torch.ops.{OP_NAMESPACE}.{back_name}({self.takes})"
        # The chart's own registration (wrapping.operator_autograd_source), its free names bound as the chart binds them.
        self.source.add(f"def backward_of({self.takes}):\n    return {backward}")
        self.source.add(_embedded(wrapping._as_tuple, wrapping._input_grads, wrapping.operator_autograd_source(case).strip("\n")))
        self.source.add(f"{name}.register_autograd(backward, setup_context=setup_context)")

    # -- the path

    def path(self, traced: Example, example: Example, replayed: list[Example]) -> None:
        row, spec, case = self.row, self.row.spec, self.case
        tol = case.tolerance(example.dtype)
        lines = [f"# The example the path is built with, and the smallest failing one: {traced}; {example}.",
                 f"traced = make_inputs(torch.{dtype_name(traced.dtype)}, {traced.shape!r}, {traced.seed})",
                 f"inputs = make_inputs(torch.{dtype_name(example.dtype)}, {example.shape!r}, {example.seed}, "
                 f"{dict(example.scalars)!r}, {tuple(sorted(example.absent))!r})",
                 f"ATOL, RTOL = {tol.atol!r}, {tol.rtol!r}"]
        dtypes = list(dict.fromkeys(e.dtype for e in [traced, *replayed, example]))
        if self.style is not Wrapping.CONTROL and row is not Row.CPU_FALLBACK:
            plain = "case.shipped" if self.style is Wrapping.SHIPPED else "launch"
            lines += ["# As the chart does before a cell: the launcher once in plain eager on each dtype's example (Triton "
                      "compiles the kernel here).",
                      'with stage("run"):', f"    for dtype in [{', '.join(f'torch.{dtype_name(d)}' for d in dtypes)}]:",
                      f"        {plain}(*make_inputs(dtype, {case.example_shape!r}, 0))"]
        kind = spec.kind
        for source in paths.printed(tuple(m for m in paths.of(row) if m is not serving)):  # the cell's own path, as it ran
            self.source.add(source)
        names = "[f'output {n}' for n in range(count)]"
        reference = "case.reference_outputs"
        compared_inputs = True  # the inputs after the call are compared too: a mutation must happen, and only where declared
        if kind is Kind.TRAIN:
            self._train_step()
            graded = [n for n, p in zip(self.params, case.input_parameters())
                      if (p.annotation is torch.Tensor or n in case.optional_inputs) and p.name not in case.no_grad]
            gradients = [f"gradient of input {n!r}" for n in graded]
            names = f"[f'output {{n}}' for n in range(count - {len(gradients)})] + {gradients!r}"
            reference, compared_inputs = "step(case.reference_outputs, NO_GRAD)", False
        if kind is Kind.EAGER or (kind is Kind.SUBSYSTEM and row is Row.CPU_FALLBACK):
            lines += ["artifact = program"]
        elif kind in (Kind.COMPILE, Kind.WARM_CACHE, Kind.TRAIN):
            if spec.compile_options is None:  # training without a compiler
                lines += ["artifact = step(program, NO_GRAD)"]
            else:
                if kind is Kind.WARM_CACHE:
                    lines.insert(0, "# The chart compiled this once, then again in a new process on the warm caches after editing "
                                    "the kernel; this file makes the first compile, where the cell failed or its failure begins.")
                lines += self._compiled_per_dtype(kind, traced)
        elif kind in (Kind.EXPORT, Kind.AOTI, Kind.AOTI_CPP, Kind.AOTI_FRESH):
            lines += self._export(kind)
        elif kind in (Kind.EXPORT_LOAD, Kind.CACHE_ARTIFACTS, Kind.PRECOMPILE):
            lines[:0] = self._served(kind)  # before anything is run: the new process this file is started as takes this branch
            lines += self._saved(kind, traced)
        elif kind is Kind.SUBSYSTEM:
            reference, names = self._subsystem(lines)
            compared_inputs = row not in (Row.FLOP_COUNTER, Row.OPCHECK)
        else:
            raise NotImplementedError(f"no reproducer for rows of kind {kind}: harness.execution.reproducer writes each kind's path")

        def path(dtype: str) -> str:  # the artifact a call of this dtype runs
            return f"artifact_of({dtype})" if self._per_dtype() else "artifact"

        after = " + [x for x in after if isinstance(x, torch.Tensor)]" if compared_inputs else ""
        before = " + [x for x in expected_inputs if isinstance(x, torch.Tensor)]" if compared_inputs else ""
        lines += [
            "",
            "",
            "def run(values, path):",
            "    expected_inputs, after = clone(values), clone(values)",
            f"    reference_outputs = flatten(({reference})(*expected_inputs))",
            "    count = len(reference_outputs)",
            f"    names = {names} + [f'input {{n}} after the call' for n in range(len(values))]",
            '    with stage("run", called=True):',
            f"        actual = flatten(path(*after)){after}",
            '    with stage("run"):',
            f"        check(actual, reference_outputs{before}, names, ATOL, RTOL)",
            "",
            "",
            *_replay(replayed, path("dtype")),
            f"run(inputs, {path(f'torch.{dtype_name(example.dtype)}')})",
        ]
        if spec.replays:
            lines += [f"for replay in range(1, {spec.replays + 1}):  # new values in the same input buffers, as a CUDA graph replays",
                      f"    fresh = make_inputs(torch.{dtype_name(example.dtype)}, {example.shape!r}, replay)",
                      "    for buffer, value in zip(inputs, fresh):",
                      "        if isinstance(buffer, torch.Tensor):",
                      "            buffer.copy_(value)",
                      f"    run(inputs, {path(f'torch.{dtype_name(example.dtype)}')})"]
        lines += ['print("\\nPASSED: the path ran and matched the reference")']
        self.source.add("\n".join(lines))

    def _per_dtype(self) -> bool:
        """Whether the path is torch.compile, which the chart builds anew for each dtype (Execution.artifact)."""
        return self.row.spec.kind in (Kind.COMPILE, Kind.WARM_CACHE, Kind.TRAIN) and self.row.spec.compile_options is not None

    def _compiled_per_dtype(self, kind: Kind, traced: Example) -> list[str]:
        """torch.compile of the program made anew for each dtype on its first call and called once on that dtype's
        example (seed 0 at example_shape), as the chart builds it (builders.compiled); in training, the forward alone,
        on inputs that require grad. Two compiled functions of one program share Dynamo's and Inductor's caches."""
        spec = self.row.spec
        first = (f"leaves(make_inputs(dtype, {self.case.example_shape!r}, 0), NO_GRAD)" if kind is Kind.TRAIN
                 else f"make_inputs(dtype, {self.case.example_shape!r}, 0)")
        settings = dict(spec.dynamo_config) if spec.dynamo_config else None
        options_dict = ", ".join(f"{k!r}: {v!r}" for k, v in (spec.compile_options or {}).items())
        return ["", "",
                "def build(dtype):",
                f"    called = compiled(program, {{{options_dict}}}, settings={settings!r}, marked_unbacked={bool(spec.unbacked)}, "
                f"batched={self.case.batched!r}, inference_mode={bool(spec.inference_mode)})",
                '    with stage("compile", called=True):',
                f"        called(*{first})",
                "    return step(called, NO_GRAD)" if kind is Kind.TRAIN else "    return called",
                "",
                "",
                "ARTIFACTS = {}",
                "",
                "",
                "def artifact_of(dtype):",
                "    if dtype not in ARTIFACTS:",
                "        ARTIFACTS[dtype] = build(dtype)",
                "    return ARTIFACTS[dtype]",
                "",
                "",
                f"artifact_of(torch.{dtype_name(traced.dtype)})"]

    def _served(self, kind: Kind) -> list[str]:
        """The branch this file takes when it is started again as the new process that loads what was saved
        (harness.execution.saved): the case and its style are defined above, as there; then the saved file is loaded
        by the row's path (harness.execution.paths.saving) and called once."""
        load = {Kind.EXPORT_LOAD: "load_program", Kind.CACHE_ARTIFACTS: "load_caches", Kind.PRECOMPILE: "load_precompiled"}[kind]
        return ['if sys.argv[1:2] == ["--load"]:  # the new process that loads what was saved (see `artifact` below)',
                "    saved_file, inputs_file, outputs_file = sys.argv[2:5]",
                '    with stage("load"):',
                f"        loaded = {load}(saved_file, program, {dict(self.row.spec.compile_options or {})!r})",
                "    values = [received(x, DEVICE) for x in torch.load(inputs_file, weights_only=False)]",
                '    with stage("compile", called=True):' if kind is Kind.CACHE_ARTIFACTS else '    with stage("run"):',
                "        out = loaded(*values)",
                "    torch.save((out, values), outputs_file)",
                "    sys.exit(0)",
                ""]

    def _saved(self, kind: Kind, traced: Example) -> list[str]:
        """The path saved here, and `artifact`: each call starts this file again as the new process that loads it."""
        self.source.imports.update({"os", "subprocess", "tempfile"})
        spec = self.row.spec
        options = dict(spec.compile_options or {})
        lines = ["folder = tempfile.mkdtemp()"]
        if kind is Kind.EXPORT_LOAD:
            lines = self._export(Kind.EXPORT)[:-1] + lines + ["SAVED = os.path.join(folder, 'program.pt2')",
                                                             "save_program(exported, SAVED, stage=stage)"]
        elif kind is Kind.CACHE_ARTIFACTS:
            lines += [f"compiled_here = compiled(program, {options!r})", 'with stage("compile", called=True):', "    compiled_here(*traced)",
                      "SAVED = os.path.join(folder, 'cache-artifacts')", "save_caches(SAVED, stage=stage)"]
        else:
            lines += ["SAVED = os.path.join(folder, 'precompiled')",
                      f"precompile(program, {options!r}, {dict(spec.dynamo_config or {})!r}, traced, SAVED, stage=stage)"]
        caches = kind is Kind.CACHE_ARTIFACTS
        return lines + [
            "",
            "",
            "def artifact(*values):",
            f"    # as the chart does: a new process{', its compile caches empty (the artifacts are all it has),' if caches else ''} "
            "that imports the case, builds the style and loads the saved file",
            "    call_folder = tempfile.mkdtemp()",
            "    inputs_file, outputs_file = os.path.join(call_folder, 'inputs.pt'), os.path.join(call_folder, 'outputs.pt')",
            "    torch.save([sent(x) for x in values], inputs_file)  # a view stays a view of its base",
            "    env = {**os.environ, 'TORCHINDUCTOR_CACHE_DIR': os.path.join(call_folder, 'inductor'), "
            "'TRITON_CACHE_DIR': os.path.join(call_folder, 'triton')}" if caches else "    env = None",
            "    done = subprocess.run([sys.executable, __file__, '--load', SAVED, inputs_file, outputs_file], capture_output=True, "
            "text=True, env=env)",
            "    if done.returncode != 0:",
            "        print(done.stderr, file=sys.stderr)",
            "        print(done.stdout)",
            "        sys.exit(done.returncode)",
            "    out, after = torch.load(outputs_file, weights_only=False)",
            "    for value, written in zip(values, after):",
            "        if isinstance(value, torch.Tensor):",
            "            value.copy_(written)",
            "    return out",
        ]

    def _export(self, kind: Kind) -> list[str]:
        case, spec = self.case, self.row.spec
        self.source.imports.update({"os", "tempfile"})
        lines = [f"exported = export(program, traced, strict={bool(spec.strict)}, max_batch={case.max_batch}, "
                 f"batched={case.batched!r}, dims={dict(case.dynamic_dims)!r}, min_batch={case.min_batch}, stage=stage)"]
        if kind is Kind.EXPORT:
            return lines + ["artifact = exported.module()"]
        lines += [f'package_path = package(exported, os.path.join(tempfile.mkdtemp(), "{case.name}.pt2"), stage=stage)']
        if kind is Kind.AOTI:
            return lines + ["artifact = load(package_path, stage=stage)"]
        self.source.imports.add("subprocess")
        # The new process: this file again, taking its serving branch (paths.serving's main) before anything but torch
        # is imported, so that the case's module and its operators are not there.
        self.source.served = "\n\n\n".join(paths.printed((serving,)) + [
            'if sys.argv[1:2] == ["--serve"]:  # the new process that serves the package (see `artifact` below)',
            "    sys.exit(main(sys.argv[2]))"])
        where = ("from C++ (AOTIModelPackageLoader, no Python); this file loads it with the same loader in a new Python "
                 "process that imports torch only" if kind is Kind.AOTI_CPP else "in a new Python process that imports torch only")
        return lines + [
            f"# The chart ran the package {where}, as a serving process loads it.",
            "server = subprocess.Popen([sys.executable, __file__, '--serve', DEVICE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)",
            "",
            "",
            "class ServeFailed(Exception):",
            '    """What the serving process answered instead of what was asked."""',
            "",
            "",
            "def asked(line, expected):",
            "    if line is not None:",
            "        server.stdin.write(line + '\\n')",
            "        server.stdin.flush()",
            "    answer = server.stdout.readline().strip() or f'error the serving process died (exit status {server.wait()})'",
            "    if answer != expected:",
            "        raise ServeFailed(answer.removeprefix('error ').replace('\\\\n', '\\n'))",
            "",
            "",
            'with stage("aot_load"):',
            "    asked(None, 'ready')",
            "    asked(f'load 0 {package_path}', 'loaded')",
            "",
            "",
            "def artifact(*values):",
            "    folder = tempfile.mkdtemp()",
            "    inputs_file, outputs_file = os.path.join(folder, 'in.pt'), os.path.join(folder, 'out.pt')",
            "    torch.save(sent_tensors(values), inputs_file)",
            "    asked(f'0 {inputs_file} {outputs_file}', 'ok')",
            "    outputs, after = torch.load(outputs_file, weights_only=False)",
            "    return as_returned(values, outputs, after, DEVICE)",
        ]

    def _train_step(self) -> None:
        # the inputs that take no gradient (the case's no_grad), by position, as the chart passes them to leaves and step
        self.source.add(f"NO_GRAD = {self.case.no_grad_positions!r}")

    def _subsystem(self, lines: list[str]) -> tuple[str, str]:
        """The row's program (`artifact`, made by its path: harness.execution.paths.subsystems) added to `lines`; returns
        its reference and its outputs' names (source)."""
        row, case = self.row, self.case
        if row is Row.OPCHECK:
            # The operator the chart checks: the library's own as the case names it, or the one the style registers.
            op = "case.shipped" if self.style is Wrapping.SHIPPED else f"torch.ops.{OP_NAMESPACE}.{case.name}_{self.style.value}.default"
            lines += [f"artifact = opchecked({op})"]
            return "lambda *values: []", "[]"
        if row is Row.FLOP_COUNTER:
            lines += ["artifact = flops_counted(program)"]
            return "flops_expected(case.reference, case.flops)", "['the flop count']"
        if row is Row.TENSOR_SUBCLASS:
            lines += [f"artifact = on_two_tensors(program, {bool(case.mutates)!r})"]
            return "on_halves(case.reference_outputs)", "[f'the result\\'s .{part}' for part in 'ab' for _ in range(count // 2)]"
        raise ValueError(f"{row} is not a subsystem row with a program of its own")



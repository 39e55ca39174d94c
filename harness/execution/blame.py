"""Whose code raised: the case's own, the harness's, or what the cell measures. The case's own is its module, launcher,
backward, reference and kernels; what the cell measures is torch, Triton, the interpreter. A plain eager call of the
launcher that raises in the case's own code is the case's error (harness.execution.execute); a module the harness named
that cannot be imported is the harness's (`harness_named_module`); the interpreter's missing device-library functions
are read off the kernels' bytecode here too.
"""

from __future__ import annotations

import dataclasses
import dis
import inspect
import io
import linecache
import os
import sys
import tokenize
from types import TracebackType
from typing import Any, Callable

import triton

from harness.authoring.case import KERNEL_TYPES, Case, kernel_function
from harness.authoring.registry import LONE_FILE
from harness.model.errors import HarnessError, described
from harness.model.outcome import CaseCodeError, Stage


class LauncherRaised(CaseCodeError):
    """The case's launcher (or its shipped op) raised in the case's own code when called in plain eager, before any
    wrapping: `explained` is the chart's message (what was raised, where, and the fix), `where` the traceback."""

    def __init__(self, stage: Stage, error: BaseException, explained: str, where: str):
        super().__init__(stage, error)
        self.explained, self.where = explained, where


# Packages whose code is never a case's own, though a case may name their functions (reference=torch.clone).
_FOREIGN_PACKAGES = frozenset({"torch", "triton", "hypothesis", "builtins"})
_TRITON_DIR = os.path.dirname(os.path.abspath(triton.__file__)) + os.sep
_TRITON_JIT_FILE = os.path.join(_TRITON_DIR, "runtime", "jit.py")
_INSPECT_FILE = os.path.abspath(inspect.__file__)


def _foreign(module: str) -> bool:
    top = module.partition(".")[0]
    if top == "harness":  # the built-in cases install inside the package, as harness.cases
        return not (module == "harness.cases" or module.startswith("harness.cases."))
    return top in _FOREIGN_PACKAGES or top in sys.stdlib_module_names


class HarnessNamedModule(HarnessError):
    """A module whose name the harness made could not be imported: what the harness did, not what the cell measures."""


def harness_named_module(error: BaseException) -> HarnessNamedModule | None:
    """The harness's own failure where `error`, or an exception it was raised from, is an ImportError of a module whose
    name the harness made: a lone case file's name of its own (harness.authoring.registry.LONE_FILE), which no user's
    process has, or one of the harness's modules. None for any other error. Asked only in a process that imported what
    the cell's process imported (the cell's own, the saved-run and warm-cache rows' new processes): a package served
    where nothing of the harness is imported (aoti_serve) that asks for one is the row's finding."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        name = error.name if isinstance(error, ImportError) else None
        if name and (name.startswith(LONE_FILE) or name == "harness" or name.startswith("harness.")):
            made = "the name the harness gives a lone case file" if name.startswith(LONE_FILE) else "a module of the harness"
            return HarnessNamedModule(f"{name}, {made}, could not be imported: {described(error)}")
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return None


def _python_function(owner: Any) -> Any:
    """The Python function behind a launcher, a reference or a kernel (seen through @triton.jit, autotune and
    heuristics, whose `.fn` each wraps the next), or None for a builtin or an operator object."""
    function = kernel_function(owner)
    return inspect.unwrap(function) if function is not None else None


def _normalized(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


_case_files: dict[str, frozenset[str]] = {}


def case_files(case: Case) -> frozenset[str]:
    """The files of the case's own code: its module's, and those of its launcher, backward, reference and kernels
    (never torch's, triton's, hypothesis', the harness's or the standard library's, whichever of their functions
    the case names). Computed once a process."""
    if case.name in _case_files:
        return _case_files[case.name]
    owners: list[Any] = [case.launch, case.reference, *case.kernels]
    if case.backward is not None:
        owners += [case.backward.launch, *case.backward.kernels]
    modules = {case.module} if case.module and not case.module.endswith(".py") else set()
    files = {_normalized(os.path.abspath(case.module))} if case.module.endswith(".py") else set()
    for owner in owners:
        function = _python_function(owner)
        module = getattr(function if function is not None else owner, "__module__", None) or ""
        if not module or _foreign(module):
            continue
        modules.add(module)
        if function is not None and not function.__code__.co_filename.startswith("<"):
            files.add(_normalized(function.__code__.co_filename))
    for module in modules:
        path = getattr(sys.modules.get(module), "__file__", None)
        if path and not _foreign(module):
            files.add(_normalized(path))
    _case_files[case.name] = frozenset(files)
    return _case_files[case.name]


def _runs_a_kernel(frame: Any) -> bool:
    """Whether the frame runs a @triton.jit function's body: Triton's interpreter runs kernels as Python, in their
    own files, and what a kernel's body raises there is the interpreter's finding (a compile error on a GPU)."""
    return isinstance(frame.f_globals.get(frame.f_code.co_name), KERNEL_TYPES)


def _instruction(tb: TracebackType) -> str:
    """The bytecode instruction a traceback entry stopped at (RAISE_VARARGS, CALL, LOAD_ATTR, ...)."""
    name = ""
    for instruction in dis.get_instructions(tb.tb_frame.f_code):
        if instruction.offset > tb.tb_lasti:
            break
        name = instruction.opname
    return name


def _binding_arguments(filename: str) -> bool:
    """Frames that bind a Triton launch's arguments to the kernel's parameters: Triton's runtime (jit.py, the
    interpreter), inspect (the interpreter's getcallargs) and the binder Triton generates on a GPU (<string>)."""
    return filename.startswith("<") or os.path.abspath(filename).startswith(_TRITON_DIR) or os.path.abspath(filename) == _INSPECT_FILE


@dataclasses.dataclass(frozen=True)
class CaseRaiser:
    """Where in the case's own code an exception was raised. `launch`: a Triton kernel launched there was given
    arguments that do not match its parameters (the TypeError rose from Triton's binding of them)."""

    filename: str
    lineno: int
    function: str
    source: str
    launch: bool


def raised_by_case_code(error: BaseException, files: frozenset[str]) -> CaseRaiser | None:
    """Where the case's own code (`files`, case_files) raised `error`, or None where something else did.

    The case's: an exception its own frame raised, by a raise or an assert, or by Python running its line (a name,
    an attribute, a key it lacks); and a TypeError from binding a Triton kernel's arguments to its parameters at a
    launch the case's code made (an argument missing, one too many), with only Triton's runtime, inspect and
    Triton's generated binder below the launch. Not the case's: what comes out of a call into compiled code
    (torch's operators: out of memory, a shape torch refuses, a device's error), a RuntimeError from torch's
    operators on tensors (`x + y`), and anything a kernel's body raises under the interpreter."""
    entries: list[TracebackType] = []
    tb = error.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    mine = [i for i, tb in enumerate(entries)
            if _normalized(tb.tb_frame.f_code.co_filename) in files and not _runs_a_kernel(tb.tb_frame)]
    if not mine:
        return None
    last = entries[mine[-1]]
    below = entries[mine[-1] + 1:]
    code = last.tb_frame.f_code

    def raiser(launch: bool) -> CaseRaiser:
        source = _without_comment(linecache.getline(code.co_filename, last.tb_lineno))
        return CaseRaiser(code.co_filename, last.tb_lineno, code.co_name, source, launch)

    if not below:
        instruction = _instruction(last)
        if instruction == "RAISE_VARARGS":
            return raiser(launch=False)
        calling = instruction.startswith("CALL") or instruction == "PRECALL"
        return None if calling or isinstance(error, RuntimeError) else raiser(launch=False)
    # The launch itself (`kernel[grid](...)`, `kernel.run(...)`, whatever wraps the kernel) enters Triton's jit.py; a
    # case's function that Triton calls back (an autotuner's do_bench running a config) is not where the launch was written.
    launched = os.path.abspath(below[0].tb_frame.f_code.co_filename) == _TRITON_JIT_FILE
    if (isinstance(error, TypeError) and "argument" in str(error) and launched
            and all(_binding_arguments(tb.tb_frame.f_code.co_filename) for tb in below)):
        return raiser(launch=True)
    return None


def _without_comment(line: str) -> str:
    """A line of source without its comment (a comment may explain the very mistake the message names)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]].strip()
    except (tokenize.TokenError, SyntaxError):  # a line inside a longer statement: shown as it is
        pass
    return line.strip()


def shown(path: str) -> str:
    """A path as the chart shows it: relative to the folder the run started in, where it lies inside it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def extern_calls(case: Case) -> list[tuple[str, Callable[..., Any]]]:
    """(who calls it, function) for each device-library function (triton.language.extra: libdevice and the like) the
    case's kernels call, or the @triton.jit functions they call: read off their bytecode, where each name they load
    from their module (`libdevice.j0`, `tl.extra.libdevice.j0`) is looked up as they would look it up."""
    found: dict[tuple[str, str], tuple[str, Callable[..., Any]]] = {}
    seen: set[Any] = set()

    def is_extern(value: Any) -> bool:
        return inspect.isfunction(value) and (value.__module__ or "").startswith("triton.language.extra.")

    def visit(kernel: Any, path: tuple[str, ...]) -> None:
        function = _python_function(kernel)
        if function is None or function in seen:
            return
        seen.add(function)
        path = (*path, function.__name__)
        caller = f"{path[0]} calls" + (f" through {', '.join(path[1:])}" if len(path) > 1 else "")
        codes = [function.__code__]
        for code in codes:  # the body and the functions defined in it
            codes += [c for c in code.co_consts if inspect.iscode(c)]
            instructions = list(dis.get_instructions(code))
            for i, load in enumerate(instructions):
                if load.opname != "LOAD_GLOBAL":
                    continue
                value = function.__globals__.get(load.argval)
                for attribute in instructions[i + 1:]:
                    if value is None or is_extern(value) or isinstance(value, KERNEL_TYPES):
                        break
                    if attribute.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
                        break
                    value = getattr(value, attribute.argval, None)
                if is_extern(value):
                    found.setdefault((value.__module__, value.__name__), (caller, value))
                elif isinstance(value, KERNEL_TYPES):
                    visit(value, path)

    for kernel in (*case.kernels, *(case.backward.kernels if case.backward is not None else ())):
        visit(kernel, ())
    return list(found.values())

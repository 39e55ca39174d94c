"""A case's kernels edited in their source, and the edit loaded in a new process as a user's next run loads it.

Every case kernel's source is edited (same name; one statement, `_tcm_edit_<kernel> = 2`, put in front of its body's
first simple statement on the same line, so no other line moves). How the new process loads the edit depends on where
a kernel is defined (`load_edited_case`):
- in the case's own module: the whole edited file runs again under the module's name, and the case is found in
  it anew, holding the new kernels;
- in any other module (an installed kernel library): the module is imported as it always is, its package and
  the modules it imports with it, and only each edited kernel's def, with its decorators (and the top-level
  assignments that decorate it by name after it, `k = triton.jit(k)`), runs again in the module's namespace; the
  module-level names that held the old kernel (a package's re-export) are bound to the
  new one. A library module run again whole, on its own, often cannot load: its package's __init__ imports it
  back before it has defined what the package takes from it.
Either way the whole edited text is in linecache under the file's name, so inspect, Triton and Inductor read the
edited source at unchanged line numbers. Library kernels are edited before the case's module is imported, so
`from library.kernels import my_kernel` there gets the edited kernel.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.util
import linecache
import os
import sys
import types
from typing import Any, Mapping

from harness.authoring import registry
from harness.authoring.case import Case, kernel_function, kernel_name
from harness.execution.wrapping import run_as_module
from harness.model.errors import CaseError, HarnessError, described

class KernelNotEditable(HarnessError):
    """The row cannot edit a kernel's source in place: no source file, no Python function under the kernel object,
    a body that shares its def's line, a library kernel that is not a def at its module's top level. A limit of the
    harness's edit, not a finding about the style."""


class EditNotLoaded(HarnessError):
    """The new process could not load the edited kernels, find the case in its module or build the case's style."""


def marker(name: str) -> str:
    return f"_tcm_edit_{name}"


def _function(kernel: Any) -> Any:
    inner = kernel_function(kernel)
    if inner is None:
        raise KernelNotEditable(f"{kernel!r}: no Python function under it (the row follows `.fn` from a kernel object down to "
                                "the function it edits): list the @triton.jit kernel, or a wrapper that keeps it as `.fn`, "
                                "in the case's kernels")
    return inner


def _is_edited(kernel: Any) -> bool:
    """Whether a kernel object runs the edited source: the edit's statement assigns a local of the function under it."""
    fn = _function(kernel)
    return marker(fn.__name__) in fn.__code__.co_varnames


def _def_line(node: ast.FunctionDef) -> int:
    """A def's first line as its code object counts it (co_firstlineno): its first decorator's."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


_BLOCKS = (ast.If, ast.With, ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


def _module_level_defs(statements: list[ast.stmt]) -> list[ast.FunctionDef]:
    """The defs a module runs itself, at its top level or in an if, with or try block there: those the row can run
    again alone in the module's namespace. Not those inside a def or a class (their names are not the module's)."""
    found: list[ast.FunctionDef] = []
    for node in statements:
        if isinstance(node, ast.FunctionDef):
            found.append(node)
        elif isinstance(node, _BLOCKS):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [handler.body for handler in getattr(node, "handlers", [])]
            for block in blocks:
                found += _module_level_defs(block)
    return found


def _loaded_from(module_name: str, path: str, kernel: str) -> None:
    """KernelNotEditable unless module `module_name` is loaded here from `path`: the new process imports a library
    kernel's module by that name and runs the edited def in it."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not file or os.path.realpath(file) != os.path.realpath(path):
        where = "not loaded in this process" if module is None else f"loaded from {file or 'no file'}"
        raise KernelNotEditable(f"kernel {kernel} is defined in {path}, but its module {module_name!r} is {where}: the row imports "
                                "a library kernel's module by its name in a new process and runs the edited def there; "
                                "define the kernel in a module imported by its name")


_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef,
             ast.ClassDef, ast.Match)


def _editable_statement(body: list[ast.stmt], lines: list[str], def_line: int) -> ast.stmt | None:
    """The statement the edit goes in front of: the body's first simple statement that begins its line, at the top
    of the body if there is one, else nested (a body that opens with `if tl.constexpr(...):`). A compound statement
    cannot follow `x = 2;` on its line; a statement anywhere in the body puts the edit in the kernel's source."""
    nested = [n for top in body for n in ast.walk(top) if isinstance(n, ast.stmt) and n is not top]
    for statement in [*body, *sorted(nested, key=lambda n: (n.lineno, n.col_offset))]:
        if isinstance(statement, _COMPOUND) or statement.lineno == def_line:
            continue
        if not lines[statement.lineno - 1][:statement.col_offset].strip():
            return statement
    return None


def edited_sources(kernels: tuple[Any, ...], case_file: str | None = None) -> dict[str, dict[str, Any]]:
    """{file: {"module": name, "text": edited source, "kernels": [[name, first line], ...], "whole_file": bool}},
    each kernel's body edited in its own file. `whole_file` is the case's own file (`case_file`), which the new
    process runs again whole; the kernels of any other file run again alone, each its def with its decorators, in
    their module as it is imported. KernelNotEditable says why a kernel cannot be edited, and how to make it so."""
    by_file: dict[str, dict[str, Any]] = {}
    for kernel in kernels:
        fn = _function(kernel)
        path = fn.__code__.co_filename
        if not os.path.isfile(path):
            raise KernelNotEditable(f"kernel {fn.__name__} has no source file ({path}): the row edits a kernel in its file; "
                                    "define the kernel in a .py file")
        entry = by_file.setdefault(path, {"module": fn.__module__, "edits": {}})
        entry["edits"][(fn.__name__, fn.__code__.co_firstlineno)] = None  # a dict: a kernel listed twice is edited once
    own = os.path.realpath(case_file) if case_file else None
    out = {}
    for path, entry in by_file.items():
        whole_file = os.path.realpath(path) == own
        try:
            with open(path) as f:
                lines = f.read().splitlines(True)
            tree = ast.parse("".join(lines), path)
        except (OSError, ValueError, SyntaxError) as exc:
            raise KernelNotEditable(f"kernel file {path} cannot be read and parsed: {described(exc)}") from exc
        functions = {(node.name, _def_line(node)): node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        at_module_level = {id(node) for node in _module_level_defs(tree.body)}
        edited = []
        for name, first_lineno in entry["edits"]:
            node = functions.get((name, first_lineno)) or next((n for (fname, _), n in functions.items() if fname == name), None)
            if node is None:
                raise KernelNotEditable(f"kernel {name} not found in {path}: its file changed since it was imported; run again")
            if not whole_file:
                _loaded_from(entry["module"], path, name)
                if id(node) not in at_module_level:
                    raise KernelNotEditable(f"kernel {name} ({path}, line {node.lineno}) is defined inside a function or class: "
                                            "the row runs a library kernel's def again alone, in its module's namespace; define "
                                            "it at the module's top level to test this row")
            body = node.body[1:] if (isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant)
                                     and isinstance(node.body[0].value.value, str) and len(node.body) > 1) else node.body
            statement = _editable_statement(body, lines, node.lineno)
            if statement is None:
                raise KernelNotEditable(f"kernel {name} ({path}, line {node.lineno}): no simple statement of its body begins "
                                        "a line of its own, and the row puts a statement in front of one without moving any line; "
                                        "put the body on lines of its own to test this row")
            line = lines[statement.lineno - 1]
            lines[statement.lineno - 1] = f"{line[:statement.col_offset]}{marker(name)} = 2; {line[statement.col_offset:]}"
            edited.append([name, _def_line(node)])
        out[path] = {"module": entry["module"], "text": "".join(lines), "kernels": edited, "whole_file": whole_file}
    return out


def load_edited_case(sources: Mapping[str, Mapping[str, Any]], where: registry.Location, name: str) -> Case:
    """Case `name` as the new process has it after the edit of `sources` (edited_sources). The library files are edited
    first, in their modules as imported (`_edit_in_place`), then the case's own file runs again whole (`_run_again`);
    then the case's module (`where`) is imported and the case found in it, and every kernel of it checked to be the
    edited one. EditNotLoaded says which step failed."""
    for path, source in sources.items():
        if not source["whole_file"]:
            _edit_in_place(path, source)
    for path, source in sources.items():
        if source["whole_file"]:
            _run_again(path, source)
    try:  # the module run again above is found as it stands
        case = registry.found(where, name)
    except CaseError as exc:
        raise EditNotLoaded(str(exc)) from exc
    unedited = [kernel_name(k) for k in case.kernels if not _is_edited(k)]
    if unedited:
        raise EditNotLoaded(f"case {case.name}'s kernel {', '.join(unedited)} is the kernel as it was in the new process: the case "
                            "reaches it through an object the row does not replace (it runs a library kernel's def and "
                            "decorators again and rebinds the module-level names that held the old kernel, not one kept in a "
                            "dict, a closure or a wrapper made elsewhere); list in the case's kernels the kernel its module "
                            "defines with its decorators")
    return case


def _edit_in_place(path: str, source: Mapping[str, Any]) -> None:
    """A library file's kernels edited in their module, imported as it always is (its package first, its other
    modules as they load): the whole edited text goes in linecache under the file's name (no mtime, as run_as_module
    puts it: never re-read from disk), and each kernel's def, with its decorators, runs again in the module's
    namespace at its own line numbers."""
    name, kernels = source["module"], ", ".join(kernel for kernel, _ in source["kernels"])
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - whatever the library raises, the new process could not load the edit
        raise EditNotLoaded(f"module {name} (of kernel {kernels}) cannot be imported in the new process: {described(exc)}") from exc
    if os.path.realpath(getattr(module, "__file__", None) or "") != os.path.realpath(path):
        raise EditNotLoaded(f"module {name} (of kernel {kernels}) is {getattr(module, '__file__', None)} in the new process, not "
                            f"{path}, where the cell's process found the kernel: the new process's import path differs")
    text = source["text"]
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    tree = ast.parse(text, path)
    definitions = {(node.name, _def_line(node)): node for node in _module_level_defs(tree.body)}
    for kernel, first_line_number in source["kernels"]:
        node = definitions.get((kernel, first_line_number))
        if node is None:
            raise EditNotLoaded(f"kernel {kernel}'s def (line {first_line_number}) is not at the top level of the edited {path}")
        before = vars(module).get(kernel)
        # Compiled alone, the def keeps the file's `from __future__` imports (annotations as strings, say), as Triton saw them.
        code = compile(ast.Module(body=[node, *_rebinding(tree, kernel, node)], type_ignores=[]), path, "exec",
                       flags=_future_flags(tree), dont_inherit=True)
        try:
            exec(code, vars(module))
        except Exception as exc:  # noqa: BLE001 - a decorator of the library's may raise anything
            raise EditNotLoaded(f"kernel {kernel}'s edited def and decorators, run again in {name}, raised {described(exc)}") from exc
        if before is not None:
            _rebind(before, vars(module)[kernel])


def _rebinding(tree: ast.Module, kernel: str, node: ast.FunctionDef) -> list[ast.stmt]:
    """The top-level assignments after a kernel's def that bind its name again from itself, in order: a library that
    decorates by assignment (`k = triton.jit(k)`, `k = triton.autotune(...)(k)`) makes its kernel there."""
    body = tree.body
    after = body[body.index(node) + 1:] if node in body else []
    return [statement for statement in after if isinstance(statement, ast.Assign)
            and [getattr(target, "id", None) for target in statement.targets] == [kernel]
            and any(isinstance(n, ast.Name) and n.id == kernel for n in ast.walk(statement.value))]


def _future_flags(tree: ast.Module) -> int:
    """The compiler flags of a file's `from __future__` imports."""
    flags = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            flags |= sum(getattr(__future__, alias.name).compiler_flag for alias in node.names if hasattr(__future__, alias.name))
    return flags


def _rebind(old: Any, new: Any) -> None:
    """Every module-level name that held the old kernel now holds the new one: a package's re-export
    (`from .kernels import my_kernel` in its __init__) and whichever loaded module imported it before the edit; and
    every module-level Case that listed it lists the new one (`_relist`)."""
    for module in list(sys.modules.values()):
        if not isinstance(module, types.ModuleType):
            continue
        namespace = vars(module)
        for name, value in list(namespace.items()):
            if value is old:
                namespace[name] = new
            for case in _module_level_cases(value):
                _relist(case, old, new)


def _module_level_cases(value: Any) -> list[Case]:
    """The Cases a module-level value is or holds, found as harness.authoring.registry.cases_of finds them."""
    if isinstance(value, Case):
        return [value]
    return [c for c in value if isinstance(c, Case)] if isinstance(value, (list, tuple)) else []


def _relist(case: Case, old: Any, new: Any) -> None:
    """The case's kernels (and its backward's) with the new kernel for the old one. A case module that is not run
    again (its cases built in another module, which the case file imports and adapts) still holds them: as a fresh
    process would import the edited file, its launcher reaches the new kernel, so its case must list that one. The
    Case object is changed in place, where every holder of it sees it; only this new process has it."""
    for holder in (case, case.backward):
        if holder is not None and any(k is old for k in holder.kernels):
            object.__setattr__(holder, "kernels", tuple(new if k is old else k for k in holder.kernels))


def _run_again(path: str, source: Mapping[str, Any]) -> None:
    """The case's own file run again whole under its module's name (its case is found in it anew)."""
    name = source["module"]
    package = name.rpartition(".")[0]
    try:
        if package:  # imported whole first: its __init__ may import this module, which must not find itself half run
            importlib.import_module(package)
        run_as_module(name, path, source["text"])
    except Exception as exc:  # noqa: BLE001 - the case's module may raise anything; it loaded in the cell's process
        raise EditNotLoaded(f"the case's module {name}, edited, cannot run again in the new process: {described(exc)}") from exc

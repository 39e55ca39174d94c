"""Finding cases: every module of the `cases` package, or modules and files a user names.

A module that fails to import and a case that is malformed are problems to report, not reasons to stop:
`load` returns the good cases and a list of problems, each naming the module, the case and the fix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import os
import pkgutil
import sys
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterator

from harness.model.errors import CaseError

if TYPE_CHECKING:
    from harness.authoring.case import Case

BUILTIN = "harness.cases"  # the built-in cases, installed inside the package (cases/ in the checkout)
LONE_FILE = "tcm_user_"  # the prefix of the name a lone case file is imported under (_import)


@dataclass(frozen=True)
class CaseProblem:
    """Why a module or a case was left out of the matrix."""

    module: str
    case: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.module}: " + (f"case {self.case!r}: " if self.case else "") + self.message

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Loaded:
    cases: dict[str, Case]
    problems: list[CaseProblem]


def _import(spec: str, lone_name: str | None = None) -> ModuleType:
    """A case module, imported the way pytest imports a test module: a file's folder (for a file inside a
    package, or a package's own folder, the folder above its top package) goes first on sys.path, so the case imports the modules beside
    it as its own tests would; a file inside a package is imported by its dotted name, so relative imports work. A lone
    file is imported under `lone_name` where given (the name another process gave it), else under a name free here."""
    if not is_file_spec(spec):
        return importlib.import_module(spec)
    path = os.path.abspath(spec)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file {path}: give a .py file or an importable module name")
    name, root = _dotted_name(path)
    importable(root)
    if "." in name or os.path.isdir(path):  # a module of a package, or a package's folder: each of its modules a case file
        if os.path.isdir(path) and not os.path.exists(os.path.join(path, "__init__.py")):
            raise FileNotFoundError(f"{path} is a folder without __init__.py: give a package's folder, or its .py files")
        return importlib.import_module(name)
    return _imported_lone(path) or _import_lone(path, lone_name or _free_name(LONE_FILE + name))


def _imported_lone(path: str) -> ModuleType | None:
    """The lone case file at `path` as this process imported it (_import_lone), under whatever name it was given."""
    return next((m for m in list(sys.modules.values()) if isinstance(m, ModuleType) and lone_file(m) == path), None)


def _free_name(name: str) -> str:
    """`name`, or where another module holds it (a lone file of the same name in another folder: two kernels.py),
    `name_2`, `name_3`... Dynamo and pickle find a function's module by its name in sys.modules: a second file under
    the first one's name would replace it there, and the first file's compiled code would read the second's globals.
    Every process of a run loads the --cases in the same order, so each file gets the same name in each; a process
    that loads one file alone (a cell's new process) is told its name (Location.imported_as)."""
    taken, n = name, 1
    while taken in sys.modules:
        n += 1
        taken = f"{name}_{n}"
    return taken


def _import_lone(path: str, name: str) -> ModuleType:
    """A lone case file imported under `name`, a name of its own, so that a case file named like another module
    (cases.py, copy.py) shadows nothing."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec and module_spec.loader
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def is_file_spec(spec: str) -> bool:
    """Whether --cases names a file or folder (else a module importable by its name)."""
    return spec.endswith(".py") or os.sep in spec


def resolved(spec: str) -> str:
    """A --cases spec as a results file records it: a file or folder by its absolute path, a module by its name."""
    return os.path.abspath(spec) if is_file_spec(spec) else spec


def module_of(label: str) -> ModuleType | None:
    """The imported module a case's `module` label names (cases_of labels a case with where `load` found it: a module's
    name, or the file --cases named), as `_import` imported it, or None where none is. A file is found by its path:
    a lone file under the name of its own it was given, not another module its folder's siblings import it as."""
    if not is_file_spec(label):
        return sys.modules.get(label)
    path = os.path.abspath(label)
    name, _ = _dotted_name(path)
    return sys.modules.get(name) if "." in name else _imported_lone(path)


def lone_file(module: ModuleType) -> str | None:
    """The path of the lone case file `module` was imported from under a name of its own (_import), or None."""
    path = getattr(module, "__file__", None)
    return path if module.__name__.startswith(LONE_FILE) and path else None


def _dotted_name(path: str) -> tuple[str, str]:
    """A file's module name from the first folder up that is not a package, and that folder (pytest's
    "prepend" import mode names test files so)."""
    folder, filename = os.path.split(path)
    parts = [os.path.splitext(filename)[0]]
    while os.path.exists(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
    return ".".join(parts), folder


def import_root(path: str) -> str:
    """The folder a case module's file imports from under its dotted name: the first folder up that is no package."""
    return _dotted_name(os.path.abspath(path))[1]


def search_path() -> str:
    """This process's sys.path as PYTHONPATH, for a child process that must import the case modules as this one does.
    An empty entry is this process's working folder (a run given `--cases=pkg`, started beside the package, finds the
    package through it): written out, since the child runs in a folder of its own, where a module beside the package
    (which the case's module imports its kernel from) would not be found."""
    return os.pathsep.join(p or os.getcwd() for p in sys.path)


def importable(folder: str) -> None:
    """Put a folder first on sys.path, once: a case's own modules beside it import as they do in its tests."""
    folder = os.path.abspath(folder)
    if folder not in (os.path.abspath(p) for p in sys.path if p):
        sys.path.insert(0, folder)


def _import_error(spec: str, exc: BaseException) -> CaseProblem:
    """The exception and where in the user's module it was raised, so the message points at the line."""
    where = ""
    path = os.path.abspath(spec) if spec.endswith(".py") else None
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if path and os.path.abspath(frame.filename) == path or not path and spec.replace(".", os.sep) in frame.filename:
            where = f" (line {frame.lineno}: {(frame.line or '').strip()})"
            break
    if isinstance(exc, ModuleNotFoundError) and exc.name and spec.startswith(exc.name):
        return CaseProblem(spec, None, f"no module named {exc.name!r}: give a .py file or a module importable from here")
    if isinstance(exc, FileNotFoundError) and not where:
        return CaseProblem(spec, None, str(exc))
    return CaseProblem(spec, None, f"import failed{where}: {type(exc).__name__}: {exc}")


def _modules(spec: str, problems: list[CaseProblem]) -> list[tuple[str, ModuleType]]:
    try:
        module = _import(spec)
    except Exception as exc:  # noqa: BLE001 - the user's module may raise anything: report it
        problems.append(_import_error(spec, exc))
        return []
    if not hasattr(module, "__path__"):
        return [(spec, module)]
    found = []
    for info in pkgutil.iter_modules(module.__path__):  # a package: each submodule is a case file
        name = f"{module.__name__}.{info.name}"
        try:
            found.append((name, importlib.import_module(name)))
        except Exception as exc:  # noqa: BLE001
            problems.append(_import_error(name, exc))
    return found


def cases_of(module: ModuleType, label: str) -> list[Case]:
    """The Case objects a module defines (one, or in lists), labelled with where they came from."""
    from harness.authoring.case import Case  # here, not at the top: the plugin is loaded into every pytest run, most of which need no torch

    found = [v for v in vars(module).values() if isinstance(v, Case)]
    found += [c for v in vars(module).values() if isinstance(v, (list, tuple)) for c in v if isinstance(c, Case)]
    unique = list({id(c): c for c in found}.values())
    return [dataclasses.replace(c, module=label) for c in unique]


def builtin(case: Case) -> bool:
    """Is `case` one of the harness's own? Its `module` is where `load` found it (`cases_of` labels it), and
    only the BUILTIN package's modules are built-in: a user's case is a file or module of their own, even a
    copy of a built-in case's file."""
    return case.module == BUILTIN or case.module.startswith(BUILTIN + ".")


@contextlib.contextmanager
def _environment_kept() -> Iterator[None]:
    """The process's environment as it was before: checking a case runs its make_inputs, and a variable that sets is
    the check's doing, not the module's import (which a program that imports the case runs too)."""
    before = dict(os.environ)
    try:
        yield
    finally:
        if dict(os.environ) != before:
            os.environ.clear()
            os.environ.update(before)


def load(specs: list[str] | tuple[str, ...] = (BUILTIN,)) -> Loaded:
    """The well-formed cases of every module `specs` names, and a problem for each one left out."""
    from harness.authoring import checks  # here, not at the top: as cases_of imports Case

    loaded = Loaded(cases={}, problems=[])
    for spec in specs:
        for name, module in _modules(spec, loaded.problems):
            cases = cases_of(module, name)
            if not cases:
                loaded.problems.append(CaseProblem(name, None, "defines no Case: assign one (or a list) at module level, e.g. CASE = Case(...)"))
            for case in cases:
                try:
                    with _environment_kept():
                        checks.check(case)
                except CaseError as exc:
                    loaded.problems.append(CaseProblem(name, exc.case, str(exc).split(": ", 1)[1]))
                    continue
                if case.name in loaded.cases:
                    first = loaded.cases[case.name].module
                    loaded.problems.append(CaseProblem(name, case.name, f"defined twice, in {first} and {case.module}: rename one"))
                    continue
                loaded.cases[case.name] = case
    loaded.cases = dict(sorted(loaded.cases.items()))
    return loaded


@dataclass(frozen=True)
class Location:
    """Where a new process finds a case: its module as `load` takes it (a module's name, or a case file's path made
    absolute), the case's file, the folder its package imports from (for a module given by name), and the name the
    cell's process imported it under: what the cell compiled and saved names its module so, and the new process
    must import the same file under the same name (a lone file's, tcm_user_kernels_2 where two files share a stem)."""

    module: str
    file: str | None
    root: str | None
    imported_as: str | None = None


def location(case: Case) -> Location:
    """The case's Location; CaseError where the case names no module (one not loaded by `load`)."""
    label = case.module
    if not label:
        raise CaseError(case.name, "names no module (Case.module is empty), and a new process imports the case's module to find it: "
                        "load the case with harness.authoring.registry, which sets it")
    module = os.path.abspath(label) if is_file_spec(label) else label
    file = module if is_file_spec(label) else getattr(sys.modules.get(label), "__file__", None)
    imported = module_of(label)
    return Location(module, file, import_root(file) if file and not is_file_spec(label) else None,
                    imported.__name__ if imported is not None else None)


def found(where: Location, name: str) -> Case:
    """The case named `name` in a new process, its module imported as `load` imports it (its package's folder put on the
    path only where the path does not find the package); CaseError saying why where it is not there."""
    if where.root and importlib.util.find_spec(where.module.partition(".")[0]) is None:
        importable(where.root)
    if where.imported_as and where.imported_as.startswith(LONE_FILE):
        with contextlib.suppress(Exception):  # what its import raises, `load` raises again and reports
            _import(where.module, where.imported_as)  # `load` then finds it by its path
    loaded = load([where.module])
    case = loaded.cases.get(name)
    if case is None:
        why = "; ".join(str(problem) for problem in loaded.problems) or f"it defines no case named {name!r}"
        raise CaseError(name, f"not found in {where.module} in the new process: {why}")
    return case

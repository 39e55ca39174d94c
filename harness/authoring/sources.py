"""What a case's outcome depends on in source, as digests: its module, the modules it reaches, the harness's code.

A run carries a cell over from an earlier one only while these are unchanged (harness.plugin.carry_over).

The modules a case reaches are found in the process that loaded it, from what its module's globals hold (modules, and the
modules of the functions, classes and kernels it names), transitively. A module of the case's own top-level package
counts alone, so that a change to one case file re-runs that case's cells only. A module of another package (a kernel
library) counts as the whole folder of its top-level package, every file in it (its configs and data too): a library
that reads a tuning table at run time changes with it. torch, Triton and the standard library are left out: their
versions are part of the run's environment, which the cell's digest holds beside this one. The environment variables
these files read by name (`os.getenv("CCE_AUTOTUNE")`) count with their values: a library may choose its kernels by one.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from types import ModuleType
from typing import Any, Iterable, Iterator

# Packages whose version, not their files, says what they are: the run's fingerprint records it (torch, Triton,
# hypothesis), or they are the harness (its own digest) or the tools that drive it.
VERSIONED = frozenset({"torch", "triton", "hypothesis", "pytest", "_pytest", "xdist", "pluggy", "harness"})
BIG_FILE = 1 << 20  # bytes: a larger file of a library's folder (a shared object) counts by its size and time, not read
# An environment variable a module reads by name (os.getenv("CCE_AUTOTUNE"), os.environ.get(...), os.environ[...]): a
# library that picks its kernels' configs from one at import is another library when it changes.
_READS_VARIABLE = re.compile(rb"""(?:getenv|environ\.get|environ\.setdefault|environ)\s*[(\[]\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""")


def _top(name: str) -> str:
    return name.partition(".")[0]


def _left_out(name: str) -> bool:
    """Is `name` a module whose files no case digest holds? harness.cases, the built-in cases, is not: each is a case file."""
    top = _top(name)
    if name == "harness.cases" or name.startswith("harness.cases."):
        return False
    return top in VERSIONED or top in sys.stdlib_module_names or top.startswith("_")


def _named_modules(module: ModuleType, submodules: bool = True) -> Iterator[str]:
    """The names of the modules that `module`'s globals hold or whose functions, classes and kernels they name; without
    `submodules`, not a package's own submodules, which the import system sets on it as attributes when any of them is
    imported (a package reached only because a case module is in it reaches its code, not every case beside it)."""
    for value in list(vars(module).values()):
        if isinstance(value, ModuleType):
            if submodules or not value.__name__.startswith(module.__name__ + "."):
                yield value.__name__
            continue
        # A Triton kernel (JITFunction, Autotuner, Heuristics) names its function's module through .fn, down its wrappers.
        inner, seen = value, 0
        while (deeper := _attribute(inner, "fn")) is not None and seen < 4:
            inner, seen = deeper, seen + 1
        for obj in (value, inner, _attribute(value, "func")):  # functools.partial keeps its function in .func
            owner = _attribute(obj, "__module__") if obj is not None else None
            if isinstance(owner, str):
                yield owner


def _attribute(obj: Any, name: str) -> Any:
    """getattr(obj, name, None) for any object a module holds: a proxy or a settings object may raise anything."""
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - another library's __getattr__
        return None


def reached(module: ModuleType) -> list[str]:
    """The names of the loaded modules `module` reaches through its globals, itself among them, less those left out. A
    package above a reached module counts (its __init__ runs first), but reaches its own submodules only as its globals'
    functions and classes name them."""
    found: dict[str, bool] = {}  # name -> reached by reference (its submodules followed), not only as a package above one
    todo = [(module.__name__, True)]
    while todo:
        name, by_reference = todo.pop()
        loaded = sys.modules.get(name)
        if (name in found and found[name] >= by_reference) or loaded is None or _left_out(name):
            continue
        found[name] = by_reference
        todo.extend((n, True) for n in _named_modules(loaded, submodules=by_reference))
        todo.extend((n, False) for n in _parents(name))
    return sorted(found)


def _parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for n in range(1, len(parts)):
        yield ".".join(parts[:n])


def _file_digest(path: str, read: bool = True, variables: set[str] | None = None) -> str:
    """The file's sha256 (its size and time where not `read`); the names of the environment variables a Python file
    reads go into `variables`."""
    if not read:
        stat = os.stat(path)
        return f"size {stat.st_size} mtime {stat.st_mtime_ns}"
    with open(path, "rb") as f:
        content = f.read()
    if variables is not None and path.endswith(".py"):
        variables.update(name.decode() for name in _READS_VARIABLE.findall(content))
    return hashlib.sha256(content).hexdigest()


def _folder_files(folder: str) -> Iterator[str]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                yield os.path.join(root, name)


def _library_parts(top: str, variables: set[str]) -> dict[str, str]:
    """{what: digest} for another package reached: every file of its top-level package's folder (or folders, for a
    namespace package), or the file of a top-level module that is no package."""
    module = sys.modules.get(top)
    folders = list(getattr(module, "__path__", []) or [])
    if not folders:
        path = getattr(module, "__file__", None)
        return {top: _file_digest(path, variables=variables) if path and os.path.isfile(path) else "no source file"}
    parts = {}
    for folder in folders:
        for file in _folder_files(folder):
            parts[f"{top}/{os.path.relpath(file, folder)}"] = _file_digest(file, read=os.path.getsize(file) <= BIG_FILE, variables=variables)
    return parts


def _own_part(name: str, variables: set[str]) -> str:
    path = getattr(sys.modules.get(name), "__file__", None)
    return _file_digest(path, variables=variables) if path and os.path.isfile(path) else "no source file"


def case_digest(module: ModuleType, env: dict[str, str], libraries: dict[str, tuple[dict[str, str], set[str]]] | None = None) -> str:
    """The digest of a case module's source and of what it reaches (see the module's doc), and of the values in `env`
    of the environment variables their Python files read by name. `libraries` keeps each other package's files and
    variables once read: a library's folder is read once a run, not once for each of its modules each case reaches."""
    own_top = _top(module.__name__) if not module.__name__.startswith("harness.cases") else "harness"
    libraries = {} if libraries is None else libraries
    parts: dict[str, str] = {}
    variables: set[str] = set()
    for name in reached(module):
        if _top(name) == own_top:
            parts[name] = _own_part(name, variables)
            continue
        if _top(name) not in libraries:
            read: set[str] = set()
            libraries[_top(name)] = _library_parts(_top(name), read), read
        library, read = libraries[_top(name)]
        parts.update(library)
        variables |= read
    parts.update({f"${name}": repr(env.get(name)) for name in variables})
    return _digest(sorted(parts.items()))


def case_digests(cases: Iterable[Any], module_of: Any, env: dict[str, str]) -> dict[str, str]:
    """Each case's digest (by case name), from the module its `module` label names (`module_of`), once a module."""
    by_module: dict[str, str] = {}
    libraries: dict[str, tuple[dict[str, str], set[str]]] = {}
    digests = {}
    for case in cases:
        if case.module not in by_module:
            module = module_of(case.module)
            by_module[case.module] = case_digest(module, env, libraries) if module is not None else "module not found"
        digests[case.name] = by_module[case.module]
    return digests


def harness_digest() -> str:
    """The digest of the harness's own code: every file of its package (the C++ runner's source too)."""
    import harness

    folder = os.path.dirname(os.path.abspath(harness.__file__))
    return _digest((os.path.relpath(file, folder), _file_digest(file)) for file in _folder_files(folder))


def _digest(parts: Iterable[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for what, digest in parts:
        h.update(f"{what}\0{digest}\n".encode())
    return h.hexdigest()

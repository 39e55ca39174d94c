"""A case's launcher in the two forms it may take, and the one way to call it with its kernels replaced.

- The `k` form, `launch(k, *inputs)`, calls `k.<kernel>[grid](...)` and allocates with `k.empty_like`: the
  harness hands it a namespace holding whatever stands for each kernel.
- The globals form, `launch(*inputs)`, is a launcher as libraries write them: it calls its kernels as module
  globals (`my_kernel[grid](...)`), perhaps through helper functions of its own or of the library, and
  allocates with torch. To put something in a kernel's place (`wrap_triton(kernel)` for a triton_op, a
  recorder for the mutation analysis), the harness calls a copy of the launcher whose globals bind the
  kernel's names to the replacements, and does the same, transitively, for the Python functions it calls.
  The library's modules are never changed.

A module the launcher reads as a global (`from . import kernels`, then `kernels.my_kernel[grid]` or
`kernels.launch_helper(...)`) is seen through as well: the copy reads a copy of that module's namespace with the
same replacements. What the rebinding cannot see: a kernel reached through a method, a functools.partial or a
container. `unreached` names the listed kernels it does not find, and the case's check reports them with the fix.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Mapping

# The packages whose functions are never copied: they launch no case kernel, and copying torch's functions
# would only cost time (and risk changing what Dynamo sees of them).
_NOT_REBOUND = ("torch", "triton", "harness", "hypothesis", "numpy", "builtins", "functools", "typing")
MAX_DEPTH = 6  # calls deep: a launcher, the library's launch helper, its helper ...


def takes_namespace(fn: Callable[..., Any]) -> bool:
    """Whether a launcher takes the harness's kernel namespace first: a first parameter named `k`, unannotated."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0].name == "k" and params[0].annotation is inspect.Parameter.empty


def _global_names(code: types.CodeType) -> set[str]:
    """Every global a function's code may read, its nested functions, lambdas and comprehensions included
    (they share its globals)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


class _Rebinder:
    """Copies of a launcher and of the functions it calls, each reading `replaced[id(kernel)]` where it read a
    kernel. A function that reaches no kernel is kept as it is (no copy)."""

    def __init__(self, replaced: Mapping[int, Any]):
        self.replaced = replaced
        self.copies: dict[int, Any] = {}
        self.found: set[int] = set()  # the ids of the kernels some function read

    def _swap(self, value: Any, depth: int, names: set[str]) -> Any:
        if id(value) in self.replaced:
            self.found.add(id(value))
            return self.replaced[id(value)]
        if isinstance(value, types.FunctionType):
            return self.function(value, depth + 1)
        if isinstance(value, types.ModuleType):
            return self._module(value, depth, names)
        return value

    def _module(self, module: types.ModuleType, depth: int, names: set[str]) -> types.ModuleType:
        """A module read as a global: a stand-in holding the replacements among the attributes the function names
        (co_names holds attribute names too), or the module itself where none changes."""
        if (module.__name__ or "").split(".")[0] in _NOT_REBOUND or depth > MAX_DEPTH:
            return module
        changed = {}
        for name in names & set(vars(module)):
            value = vars(module)[name]
            if value is module or isinstance(value, types.ModuleType):
                continue  # one level of modules: a package's submodules are reached through their own functions
            swapped = self._swap(value, depth, names)
            if swapped is not value:
                changed[name] = swapped
        if not changed:
            return module
        view = types.ModuleType(module.__name__, module.__doc__)
        view.__dict__.update({**vars(module), **changed})
        return view

    def function(self, fn: types.FunctionType, depth: int = 0) -> types.FunctionType:
        if id(fn) in self.copies:
            return self.copies[id(fn)]
        if depth > MAX_DEPTH or (fn.__module__ or "").split(".")[0] in _NOT_REBOUND:
            return fn
        self.copies[id(fn)] = fn  # a recursive function reads itself as it is
        changed = {}
        names = _global_names(fn.__code__)
        for name in names:
            if name in fn.__globals__:
                value = fn.__globals__[name]
                swapped = self._swap(value, depth, names)
                if swapped is not value:
                    changed[name] = swapped
        closure = fn.__closure__
        if closure:
            cells = []
            for cell in closure:
                try:
                    value = cell.cell_contents
                except ValueError:  # a cell not yet filled
                    cells.append(cell)
                    continue
                swapped = self._swap(value, depth, _global_names(fn.__code__))
                cells.append(cell if swapped is value else types.CellType(swapped))
            if any(new is not old for new, old in zip(cells, closure)):
                closure = tuple(cells)
        if not changed and closure is fn.__closure__:
            return fn
        copy = types.FunctionType(fn.__code__, {**fn.__globals__, **changed}, fn.__name__, fn.__defaults__, closure)
        copy.__kwdefaults__ = fn.__kwdefaults__
        copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        copy.__dict__.update(fn.__dict__)
        copy.__annotations__ = fn.__annotations__
        self.copies[id(fn)] = copy
        return copy


def rebound(launch: Callable[..., Any], replaced: Mapping[int, Any]) -> Callable[..., Any]:
    """A globals-form launcher reading `replaced[id(kernel)]` wherever it, or a function it calls, reads a kernel."""
    if not isinstance(launch, types.FunctionType):
        return launch
    return _Rebinder(replaced).function(launch)


def unreached(launch: Callable[..., Any], kernels: tuple[Any, ...]) -> list[Any]:
    """The kernels a globals-form launcher never reads as a global or a closure variable, here or in the
    functions it calls: the harness could not put a wrapped kernel in their place."""
    if not isinstance(launch, types.FunctionType):
        return list(kernels)
    rebinder = _Rebinder({id(k): object() for k in kernels})
    rebinder.function(launch)
    return [k for k in kernels if id(k) not in rebinder.found]

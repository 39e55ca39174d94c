"""What every cell of a runner starts from: torch's compiler configuration and the environment as before its first cell.

Dynamo's, Inductor's and functorch's configurations are the process's. A cell changes them through config.patch,
undone when it ends, but torch itself changes some entries in place as it compiles (an AOTInductor build fills
`aot_inductor.metadata`), and a case's own code may set them: the next cell in the same runner would start from what
the last one left, where a new process starts from the defaults. Put back before each cell, every cell starts as the
runner's first did (harness.execution.runner_main).
"""

from __future__ import annotations

import copy
import importlib
import os
from typing import Any

CONFIGS = ("torch._dynamo.config", "torch._inductor.config", "torch._functorch.config")


class ConfigBaseline:
    """The configurations as they are when it is made, put back by `restore`."""

    def __init__(self) -> None:
        self._modules = [importlib.import_module(name) for name in CONFIGS]
        self._values = [copy.deepcopy(module.get_config_copy()) for module in self._modules]

    def restore(self) -> list[str]:
        """Put back every entry that differs from what was taken; the entries that did, by their full names."""
        changed = []
        for module, values in zip(self._modules, self._values):
            now = module.get_config_copy()
            for key, value in values.items():
                if now.get(key) != value:
                    _put_back(module, key, copy.deepcopy(value))
                    changed.append(f"{module.__name__}.{key}")
        return changed


def _put_back(module: Any, key: str, value: Any) -> None:
    """A container torch filled in place is emptied and refilled in place (it may be the entry's default object, which
    setting would leave changed); anything else is set."""
    current = getattr(module, key)
    if isinstance(current, (dict, set, list)) and type(current) is type(value):
        current.clear()
        if isinstance(current, list):
            current.extend(value)
        else:
            current.update(value)
        return
    setattr(module, key, value)


# torch's setters that write the environment once a process (functools.cache'd), and what they write: a program runs
# them at its first use of what needs them, so every cell starts with them ready to run again and their variables
# unset (unless the run's own environment set them).
ONCE_A_PROCESS = (("torch._inductor.runtime.compile_tasks", "_set_triton_ptxas_path", ("TRITON_PTXAS_PATH",)),)


class EnvironmentBaseline:
    """The environment as it is when made, less what torch's once-a-process setters wrote since `started` (the
    environment the runner started with), put back by `restore`."""

    def __init__(self, started: dict[str, str]) -> None:
        written = {name for _, _, names in ONCE_A_PROCESS for name in names if name not in started}
        self._values = {k: v for k, v in os.environ.items() if k not in written}

    def restore(self) -> list[str]:
        """Put back every variable that differs from what was taken, and make torch's setters run again; the
        variables that differed, by name."""
        changed = sorted(k for k in set(os.environ) | set(self._values) if os.environ.get(k) != self._values.get(k))
        for name in changed:
            if name in self._values:
                os.environ[name] = self._values[name]
            else:
                del os.environ[name]
        for module, setter, _ in ONCE_A_PROCESS:
            _forget(module, setter)
        return changed


def _forget(module_name: str, setter: str) -> None:
    """The cached setter's cache emptied, where this torch has it."""
    try:
        cached = getattr(importlib.import_module(module_name), setter)
    except (ImportError, AttributeError):  # another torch: nothing of the kind to forget
        return
    clear = getattr(cached, "cache_clear", None)
    if callable(clear):
        clear()

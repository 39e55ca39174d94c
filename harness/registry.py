"""Finding cases: every module of the `cases` package, or modules and files a user names."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import pkgutil
import sys
from types import ModuleType

from harness.case import Case, CaseError

BUILTIN = "cases"


def _import(spec: str) -> ModuleType:
    if spec.endswith(".py") or os.sep in spec:
        path = os.path.abspath(spec)
        if not os.path.exists(path):
            raise CaseError(spec, f"no such file {path}")
        name = "tcm_user_" + os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(name, path)
        assert module_spec and module_spec.loader
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


def _modules(spec: str) -> list[ModuleType]:
    module = _import(spec)
    if hasattr(module, "__path__"):  # a package: each submodule is a case file
        return [importlib.import_module(f"{module.__name__}.{info.name}") for info in pkgutil.iter_modules(module.__path__)]
    return [module]


def _cases_of(module: ModuleType) -> list[Case]:
    found = [v for v in vars(module).values() if isinstance(v, Case)]
    found += [c for v in vars(module).values() if isinstance(v, (list, tuple)) for c in v if isinstance(c, Case)]
    unique = list({id(c): c for c in found}.values())
    return [dataclasses.replace(c, module=module.__name__) for c in unique]


def load(specs: list[str] | tuple[str, ...] = (BUILTIN,)) -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for spec in specs:
        for module in _modules(spec):
            for case in _cases_of(module):
                if case.name in cases:
                    raise CaseError(
                        case.name, f"defined twice, in {cases[case.name].module} and {case.module}: rename one"
                    )
                cases[case.name] = case
    return dict(sorted(cases.items()))

"""The package's tree as docs/layout.md shows it, made from the code: the layers in the order pyproject.toml's
contract gives them, each module with the first sentence of its docstring, and a * on each module that imports
no torch when it is imported. `python docs/layout.py` prints it; tests/harness/test_layers.py checks that
docs/layout.md holds it.

A module imports no torch when no import at its top level (one run as it is imported: not inside a function, nor
under `if TYPE_CHECKING:`) names torch, triton or numpy, and every harness module it imports that way (and the
packages above each) imports none either.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("torch", "triton", "numpy")
SUMMARY_LIMIT = 120  # characters of a module's first sentence: a line of the tree
HEAD = """harness/       the library: one layer a subpackage, highest first; a module imports only from its own layer or the
               layers below (pyproject.toml's contract, `lint-imports` in CI); those marked * import no torch"""


def layers() -> list[str]:
    """The contract's layers, highest first, as pyproject.toml lists them."""
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        text = f.read()
    block = re.search(r'type = "layers"\s*\nlayers = \[(.*?)\]', text, re.S)
    assert block, "pyproject.toml has no layers contract"
    return re.findall(r'"([\w.]+)"', block.group(1))


def path_of(module: str) -> str:
    base = os.path.join(ROOT, *module.split("."))
    return os.path.join(base, "__init__.py") if os.path.isdir(base) else base + ".py"


def summary(module: str) -> str:
    """The first sentence of the module's docstring."""
    with open(path_of(module)) as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    flat = " ".join(doc.split())
    match = re.match(r"(.+?[.?!])(\s|$)", flat)
    return (match.group(1) if match else flat).rstrip(".")


@functools.lru_cache(maxsize=None)
def _top_level_imports(module: str) -> list[str]:
    """The modules an import of `module` imports at once: its top-level import statements, not those in functions
    or under `if TYPE_CHECKING:`."""
    with open(path_of(module)) as f:
        tree = ast.parse(f.read())
    package = module if path_of(module).endswith("__init__.py") else module.rpartition(".")[0]
    names: list[str] = []

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                names.append(base)
                names.extend(f"{base}.{alias.name}" for alias in node.names if os.path.exists(path_of(f"{base}.{alias.name}")))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    visit(tree.body)
    return names


def _with_packages(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1)]


@functools.lru_cache(maxsize=None)
def imports_no_torch(module: str) -> bool:
    _visiting.add(module)
    try:
        for name in _top_level_imports(module):
            if name.split(".")[0] in HEAVY:
                return False
            if name.split(".")[0] == "harness":
                if any(m not in _visiting and not imports_no_torch(m) for m in _with_packages(name)):
                    return False
        return True
    finally:
        _visiting.discard(module)


_visiting: set[str] = set()  # the modules being read: an import circle is followed once


def _line(indent: int, name: str, text: str, width: int) -> str:
    return f"{' ' * indent}{name:<{width}}{text}"


def _modules(package: str) -> list[str]:
    folder = os.path.dirname(path_of(package))
    names = sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".py") and n != "__init__.py")
    return [f"{package}.{n}" for n in names]


def _subpackages(package: str) -> list[str]:
    """A layer's own packages (harness.execution.paths): drawn inside it, one level down."""
    folder = os.path.dirname(path_of(package))
    return [f"{package}.{n}" for n in sorted(os.listdir(folder)) if os.path.isfile(os.path.join(folder, n, "__init__.py"))]


def _defines_anything(module: str) -> bool:
    with open(path_of(module)) as f:
        return any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) for n in ast.parse(f.read()).body)


def tree() -> str:
    """The harness/ part of docs/layout.md."""
    def described(module: str) -> str:
        return summary(module) + (" *" if imports_no_torch(module) else "")

    lines = [HEAD, _line(2, "__init__.py", described("harness"), 20)]
    for layer in layers():
        name = layer.rpartition(".")[2]
        if not path_of(layer).endswith("__init__.py"):
            lines.append(_line(2, name + ".py", described(layer), 20))
            continue
        lines.append(_line(2, name + "/", summary(layer), 20))
        if _defines_anything(layer):
            lines.append(_line(4, "__init__.py", described(layer), 20))
        lines += [_line(4, m.rpartition(".")[2] + ".py", described(m), 20) for m in _modules(layer) if m != "harness.cases"]
        for sub in _subpackages(layer):
            lines.append(_line(4, sub.rpartition(".")[2] + "/", summary(sub), 20))
            lines += [_line(6, m.rpartition(".")[2] + ".py", described(m), 18) for m in _modules(sub)]
    return "\n".join(lines)


def too_long() -> list[str]:
    """Modules whose first sentence is longer than a line of the tree."""
    packages = [layer for layer in layers() if path_of(layer).endswith("__init__.py")]
    packages += [sub for layer in packages for sub in _subpackages(layer)]
    every = ["harness", *layers(), *packages] + [m for package in packages for m in _modules(package)]
    return [f"{m}: {len(summary(m))} characters" for m in every if len(summary(m)) > SUMMARY_LIMIT]


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    print(tree())

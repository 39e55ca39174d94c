"""The package's layers: pyproject.toml's contract keeps imports pointing down (`lint-imports`, run in CI); these
tests keep it true and find what the contract cannot see, two modules of one layer importing each other."""

import ast
import glob
import itertools
import os
import subprocess
import sys

import grimp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LONGEST_FUNCTION = 80  # lines: one past it is split into helpers, each with a name a reader can follow


def test_no_two_modules_import_each_other_however_indirectly():
    graph = grimp.build_graph("harness")
    circles = [(a, b) for a, b in itertools.combinations(sorted(graph.modules), 2)
               if graph.chain_exists(importer=a, imported=b) and graph.chain_exists(importer=b, imported=a)]
    assert circles == [], f"import circles: {circles}"


def test_no_function_in_the_package_is_over_eighty_lines():
    too_long = []
    for path in glob.glob(os.path.join(ROOT, "harness", "**", "*.py"), recursive=True):
        with open(path) as f:
            tree = ast.parse(f.read())
        too_long += [f"{os.path.relpath(path, ROOT)}:{node.lineno} {node.name}, {node.end_lineno - node.lineno + 1} lines"
                     for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.end_lineno - node.lineno + 1 > LONGEST_FUNCTION]
    assert too_long == [], too_long


def test_a_path_module_imports_torch_and_the_standard_library_and_of_the_harness_only_another_path_module():
    """A cell's reproducer prints its path modules as they are (harness.execution.paths) and imports nothing of the
    harness: a path module that imported the harness would not run there."""
    from harness.execution import paths

    found = []
    for path in glob.glob(os.path.join(ROOT, "harness", "execution", "paths", "*.py")):
        if path.endswith("__init__.py"):
            continue
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                top = name.partition(".")[0]
                if name == "__future__":  # printed after the file's first lines, where a future import cannot stand
                    found.append(f"{os.path.basename(path)}: a __future__ import")
                elif not (top in ("torch", "triton") or top in sys.stdlib_module_names or name.startswith(f"{paths.__name__}.")):
                    found.append(f"{os.path.basename(path)}: {name}")
    assert found == [], found


def test_the_layers_contract_is_kept():
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 kept, 0 broken" in done.stdout


def test_docs_layout_shows_every_module_with_its_docstrings_first_sentence_and_whether_it_imports_torch():
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        import layout
    finally:
        sys.path.pop(0)
    assert layout.too_long() == [], "a module's first sentence is a line of docs/layout.md: shorten it"
    with open(os.path.join(ROOT, "docs", "layout.md")) as f:
        doc = f.read()
    shown = doc.split("<!-- layout: python docs/layout.py -->\n```\n")[1].split("\n```\n<!-- end layout -->")[0]
    assert shown == layout.tree(), "docs/layout.md's tree is stale: paste `python docs/layout.py` into it"


def test_a_module_that_imports_torch_at_its_top_level_is_not_starred_nor_one_that_imports_it_through_another():
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        import layout
    finally:
        sys.path.pop(0)
    assert layout.imports_no_torch("harness.model.results")
    assert not layout.imports_no_torch("harness.execution.execute")  # imports torch itself
    assert not layout.imports_no_torch("harness.tools.reproduce")  # through harness.execution.reproducer
    starred = [m for m in _modules_shown(layout) if layout.imports_no_torch(m)]
    # One process imports them all: modules only accumulate, so torch absent after the last means absent after each;
    # where one brings it in, the probe names the first.
    probe = ("import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
             "    if any(k.split('.')[0] in ('torch', 'triton') for k in sys.modules):\n        print(m)\n        break")
    done = subprocess.run([sys.executable, "-c", probe, *starred], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"starred in docs/layout.md, but importing it imports torch or triton: {done.stdout.strip()}"

def _modules_shown(layout) -> list[str]:
    packages = [layer for layer in layout.layers() if layout.path_of(layer).endswith("__init__.py")]
    return ["harness", *layout.layers(), *(m for p in packages for m in layout._modules(p))]

"""The package's layers: pyproject.toml's contract keeps imports pointing down (`lint-imports`, run in CI); these
tests keep it true and find what the contract cannot see, two modules of one layer importing each other."""

import itertools
import os
import subprocess
import sys

import grimp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_no_two_modules_import_each_other_however_indirectly():
    graph = grimp.build_graph("harness")
    circles = [(a, b) for a, b in itertools.combinations(sorted(graph.modules), 2)
               if graph.chain_exists(importer=a, imported=b) and graph.chain_exists(importer=b, imported=a)]
    assert circles == [], f"import circles: {circles}"


def test_the_layers_contract_is_kept():
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 kept, 0 broken" in done.stdout

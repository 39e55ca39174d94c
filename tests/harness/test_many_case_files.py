"""Cases from several --cases in one run: two lone files of the same name (kernels.py) in two folders and a package's
module given by its dotted name, each a copy of tests/harness/user_modules/same_stem/kernels.py, whose globals differ by
folder under the same names. Each file's cells are its own: its compiled code reads its own module's globals, and the
new process of a row that saves imports the file the case came from under the name the cell's process gave it (what it
saved names the module)."""

import os
import shutil
import sys

import pytest

from harness.model.outcome import Outcome
from harness.model.results import load
from tests.harness.conftest import run_python

PLANTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_modules", "same_stem", "kernels.py")
PACKAGE = "tcm_same_stem_package"
FOLDERS = ("one", "two", PACKAGE)  # the copies' folders, which name their cases; "one" is loaded first


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("many_files")
    for folder in FOLDERS:
        os.makedirs(tmp / folder)
        shutil.copy(PLANTED, tmp / folder / "kernels.py")
    (tmp / PACKAGE / "__init__.py").write_text("")
    specs = (tmp / "one" / "kernels.py", tmp / "two" / "kernels.py", f"{PACKAGE}.kernels")  # the package found from the run's folder
    # precompile_fresh (what it saves names the modules of the code it inlined: the new process imports them by name) on
    # the case whose reference reads an int global; compile_no_recompile (its program calls the style from a function of
    # its own, so the reference's globals are read through its module's name) on the one whose float global compiled
    # code reads at each call. The other rows that save load no module by a name the cell's process gave it.
    selected = "_scale-control-precompile_fresh or _slope-control-compile_no_recompile"
    proc = run_python([sys.executable, "-m", "pytest", "--matrix", "-n", "2", "-q", "-p", "no:cacheprovider", "--matrix-profile=quick",
                       *(f"--cases={spec}" for spec in specs), "-k", selected, f"--report-dir={tmp / 'r'}"], cwd=tmp, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    return {c.cell.id: c for c in load(str(tmp / "r" / "results.json")).cells}


def test_a_precompiled_control_of_each_file_loads_in_a_new_process_that_imports_that_file(cells):
    """Alone, each file's control passes (as tests/harness/test_production_rows.py's plain program does); with the other
    file of its name loaded first, the new process must import this one under the name the cell's process gave it, or
    what was saved, which names that module, does not load (ModuleNotFoundError at load)."""
    for name in FOLDERS:
        cell = cells[f"{name}_scale-control-precompile_fresh"]
        assert cell.outcome is Outcome.PASS, (cell.cell.id, cell.outcome, cell.stage, cell.message)


def test_a_files_compiled_code_reads_its_own_globals_not_those_of_another_file_of_its_name(cells):
    """Compiled code finds a module's globals by the module's name: a second kernels.py imported under the first one's
    name replaced it, and the first file's float global was read from the second file (a wrong cell)."""
    for name in FOLDERS:
        cell = cells[f"{name}_slope-control-compile_no_recompile"]
        assert cell.outcome is Outcome.PASS, (cell.cell.id, cell.outcome, cell.stage, cell.message)

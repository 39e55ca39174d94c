"""The warm-cache row on kernels an installed library defines (tests/harness/user_modules/tcm_fake_library, named
by the cases of user_modules/fake_library_cases.py), and what the row's own failures are charted as.

On Triton's CPU interpreter the row is left out for every style (no compiled code holds an interpreted kernel),
so these tests run its parts directly: the new process's loading of the edited sources in a Python process of
its own, and the control's cell in this process with the interpreter off (the control compiles only PyTorch,
and goes through all of the row's machinery, the new process included).
"""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from harness.authoring import registry
from harness.execution.execute import Execution
from harness.execution.kernel_edit import edited_sources, marker
from harness.execution.warm_cache import edit_request
from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.judging import blame_environment, blame_harness, outcome_label
from harness.model.outcome import CellResult, Outcome, Stage
from harness.model.rows import Row
from harness.model.settings import DEFAULT_PROFILE, PROFILES, Settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER_MODULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_modules")
CASE_FILE = os.path.join(USER_MODULES, "fake_library_cases.py")
LIBRARY_KERNELS = os.path.join(USER_MODULES, "tcm_fake_library", "kernels.py")


@pytest.fixture(scope="module")
def library_cases():
    # Loaded as a run loads a case file: its folder goes on sys.path, which the new processes inherit.
    loaded = registry.load([CASE_FILE])
    assert not loaded.problems, loaded.problems
    return loaded.cases


def _in_new_python(script: str, *args: str) -> str:
    """The last line a fresh Python process running `script` prints; its import path is this process's, as the
    row's new process has it. Triton's interpreter is off: a kernel is then a JITFunction, whose source (`src`)
    is what Triton and Inductor read; nothing here launches one."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": registry.search_path()}
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


LOAD_THE_EDIT = """
import collections, json, linecache, sys
from harness.execution.warm_cache import Edit, edited_case
case = edited_case(Edit.of(json.load(open(sys.argv[1]))))
import tcm_fake_library
from tcm_fake_library import kernels
print(json.dumps({
    "source": kernels.copy_kernel.src,
    "first_line": kernels.copy_kernel.fn.__code__.co_firstlineno,
    "file_text": "".join(linecache.getlines(kernels.__file__)),
    "module_global_is_the_case_kernel": kernels.copy_kernel is case.kernels[0],
    "package_reexport_is_the_case_kernel": tcm_fake_library.copy_kernel is case.kernels[0],
    "executions": collections.Counter(tcm_fake_library.executed),
}))
"""


def test_a_library_kernel_is_edited_in_its_module_as_imported_and_no_module_of_the_library_runs_twice(library_cases, tmp_path):
    case = library_cases["fake_library_copy"]
    request = edit_request(case, "raw")
    edit = request.sources[LIBRARY_KERNELS]
    assert edit["module"] == "tcm_fake_library.kernels" and not edit["whole_file"]
    (tmp_path / "request.json").write_text(json.dumps(dataclasses.asdict(request)))

    seen = json.loads(_in_new_python(LOAD_THE_EDIT, str(tmp_path / "request.json")))

    assert f"    {marker('copy_kernel')} = 2; offsets = tl.program_id(0)" in seen["source"]
    assert seen["first_line"] == case.kernels[0].fn.__code__.co_firstlineno  # no line moved
    assert seen["file_text"] == edit["text"]  # inspect, Triton and Inductor read the edited file
    # The library's own global, its package's re-export and the case's kernel are one object: the edited one.
    assert seen["module_global_is_the_case_kernel"] and seen["package_reexport_is_the_case_kernel"]
    assert seen["executions"] == {"tcm_fake_library": 1, "tcm_fake_library.helpers": 1, "tcm_fake_library.kernels": 1}


BESIDE_THE_PACKAGE = """
import triton
import triton.language as tl


@triton.jit
def beside_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)
"""

PACKAGE_CASE = """
import torch
import triton

from harness import Case, inputs
from tcm_beside_kernels import beside_add_kernel


def launch(k, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.beside_add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
    return out


CASE = Case(name="beside_add", kernels=(beside_add_kernel,), launch=launch, reference=lambda x, y: x + y,
            make_inputs=inputs.randn(2), shapes=inputs.shapes(1 << 12), example_shape=(300,), max_batch=1 << 12)
"""

LOAD_THE_BESIDE_EDIT = """
import json, sys
from harness.execution.warm_cache import Edit, edited_case
case = edited_case(Edit.of(json.load(open(sys.argv[1]))))
print(json.dumps({"source": case.kernels[0].src}))
"""


def test_a_package_given_by_name_from_its_folder_finds_the_module_beside_it_in_the_new_process(tmp_path, monkeypatch):
    # `--cases=tcm_beside_pkg` run from the folder that holds the package and, beside it, the module its case imports its
    # kernel from: both are found through sys.path's empty entry, the run's working folder. The new process works in
    # a folder of its own, so that entry must reach it written out (on one H200 the row was the harness's error:
    # `module shared_kernels (of kernel add_kernel) cannot be imported in the new process`).
    (tmp_path / "tcm_beside_pkg").mkdir()
    (tmp_path / "tcm_beside_pkg" / "__init__.py").write_text("")
    (tmp_path / "tcm_beside_pkg" / "kernels.py").write_text(PACKAGE_CASE)
    (tmp_path / "tcm_beside_kernels.py").write_text(BESIDE_THE_PACKAGE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    loaded = registry.load(["tcm_beside_pkg"])
    assert not loaded.problems, loaded.problems
    request = edit_request(loaded.cases["beside_add"], "raw")
    (tmp_path / "request.json").write_text(json.dumps(dataclasses.asdict(request)))

    seen = json.loads(_in_new_python(LOAD_THE_BESIDE_EDIT, str(tmp_path / "request.json")))

    assert f"    {marker('beside_add_kernel')} = 2; offsets = tl.program_id(0)" in seen["source"]


LOAD_THE_ADAPTED_EDIT = """
import json, sys
from harness.execution.warm_cache import Edit, edited_case
case = edited_case(Edit.of(json.load(open(sys.argv[1]))))
import tcm_library_with_cases as library
print(json.dumps({"source": case.kernels[0].src, "module_global_is_the_case_kernel": library.double_kernel is case.kernels[0],
                  "the_librarys_case_lists_it": library.CASES[0].kernels[0] is case.kernels[0]}))
"""


def test_a_case_built_in_the_kernels_own_module_lists_the_edited_kernel_in_the_new_process(tmp_path):
    # The case file adapts Cases made at import in the kernel's module, which the row edits in place, not runs again.
    loaded = registry.load([os.path.join(USER_MODULES, "adapted_library_cases.py")])
    assert not loaded.problems, loaded.problems
    request = edit_request(loaded.cases["adapted_library_built_double"], "raw")
    assert [s["whole_file"] for s in request.sources.values()] == [False]  # the library's module, edited in place
    (tmp_path / "request.json").write_text(json.dumps(dataclasses.asdict(request)))

    seen = json.loads(_in_new_python(LOAD_THE_ADAPTED_EDIT, str(tmp_path / "request.json")))

    assert f"    {marker('double_kernel')} = 2; offsets = tl.program_id(0)" in seen["source"]
    assert seen["module_global_is_the_case_kernel"] and seen["the_librarys_case_lists_it"]


RUN_THE_MODULE_ALONE = """
import json, sys
from harness.execution.wrapping import run_as_module
source = json.load(open(sys.argv[1]))["sources"][sys.argv[2]]
try:
    run_as_module(source["module"], sys.argv[2], source["text"])
    print("loaded")
except ImportError as exc:
    print(f"ImportError: {exc}")
"""


def test_the_librarys_kernel_module_cannot_run_again_whole_on_its_own_so_the_row_edits_it_in_place(library_cases, tmp_path):
    """What the row did before it edited a library's kernels in place, and what it met on a GPU with a real library."""
    (tmp_path / "request.json").write_text(json.dumps(dataclasses.asdict(edit_request(library_cases["fake_library_copy"], "raw"))))
    said = _in_new_python(RUN_THE_MODULE_ALONE, str(tmp_path / "request.json"), LIBRARY_KERNELS)
    assert said.startswith("ImportError: cannot import name 'copy_kernel' from 'tcm_fake_library.kernels'"), said


@pytest.fixture(scope="module")
def run_control(tmp_path_factory):
    """Runs a case's control cell on the warm-cache row here, with fresh compile caches (its new process inherits
    them) and Triton's interpreter off, under which the row is left out whole."""
    workdir = tmp_path_factory.mktemp("warm-cache-cells")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(workdir / "inductor"))
        patch.delenv("TRITON_INTERPRET", raising=False)

        def run(case) -> CellResult:
            settings = Settings(profile=dataclasses.replace(PROFILES[DEFAULT_PROFILE], name="tests", max_examples=10), workdir=str(workdir))
            return Execution(Cell(case.name, Wrapping.CONTROL, Row("warm_cache_edit")), case, settings, "cpu").run()

        yield run


def test_the_control_of_a_case_over_an_installed_library_passes_the_warm_cache_row(library_cases, run_control):
    result = run_control(library_cases["fake_library_copy"])
    assert (result.outcome, result.message) == (Outcome.PASS, None), (result.outcome, result.stage, result.message)
    assert result.examples_run >= 1


def test_a_library_kernel_decorated_by_assignment_after_its_def_is_edited_with_its_decoration(library_cases, run_control):
    """`k = triton.jit(k)` after the def: the new process runs the def and that assignment again, so the case finds a
    kernel, edited (before, it found the bare function: the harness's error)."""
    result = run_control(library_cases["fake_library_assigned_copy"])
    assert (result.outcome, result.message) == (Outcome.PASS, None), (result.outcome, result.stage, result.message)


def test_a_kernel_the_row_cannot_edit_is_not_tested_here_with_why_and_no_compile_is_spent_on_it(library_cases, run_control):
    # Neither the style's finding nor the environment's: the row cannot ask its question of this kernel.
    result = run_control(library_cases["fake_library_one_line_copy"])
    assert result.outcome is Outcome.SKIPPED, (result.outcome, result.message)
    assert result.message.startswith(f"not tested here: the row edits each kernel's source, and kernel one_line_copy_kernel ({LIBRARY_KERNELS}, line ")
    assert "put the body on lines of its own to test this row" in result.message
    assert Stage.COMPILE.value not in result.timings.stages


def test_a_kernel_whose_body_opens_with_a_compound_statement_is_edited_before_its_first_simple_one(tmp_path):
    import triton
    import triton.language as tl

    source = tmp_path / "opens_with_if.py"
    source.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, FLAG: tl.constexpr):\n"
                      "    if FLAG:\n        y = 1\n    else:\n        y = 2\n    tl.store(x_ptr, y)\n")
    namespace = {"triton": triton, "tl": tl, "__name__": "opens_with_if"}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    [edited] = edited_sources((namespace["k"],), str(source)).values()  # as a case file defines it
    assert edited["text"].splitlines()[10] == f"    {marker('k')} = 2; tl.store(x_ptr, y)"
    compile(edited["text"], str(source), "exec")  # `x = 2; if ...:` would not parse


@pytest.fixture(scope="module")
def case_not_found(library_cases, run_control):
    """The control's cell where the new process, having edited the library, finds no such case in the case's module."""
    misplaced = dataclasses.replace(library_cases["fake_library_copy"], module="tcm_fake_library.helpers")
    return run_control(misplaced)


def test_a_new_process_that_cannot_find_the_case_is_the_harnesss_error_not_the_cells_failure(case_not_found):
    result = case_not_found
    assert (result.outcome, result.fault, result.stage) == (Outcome.ERROR, "harness", Stage.WRAP), (result.outcome, result.message)
    assert result.error_type == "harness.EditNotLoaded"
    assert result.message.startswith("case 'fake_library_copy': not found in tcm_fake_library.helpers in the new process: "
                                     "tcm_fake_library.helpers: defines no Case"), result.message


def test_a_control_that_is_the_harnesss_error_makes_no_style_on_its_row_read_env(case_not_found):
    control = case_not_found
    style = CellResult(Cell(control.case, Wrapping.RAW, control.row), Outcome.FAIL, stage=Stage.RUN, message="compiled, then failed")
    judged = {c.cell.id: c for c in blame_environment(blame_harness([control, style]))}
    assert judged[style.cell.id].blamed_on is None
    assert outcome_label(judged[style.cell.id]) == "harness error @run"  # the control was not measured past wrap
    assert judged[style.cell.id].message.startswith(f"the control {control.cell.id} failed by the harness's own fault at wrap")
    # Where the control fails on the path itself, the same failure is the environment's: the blame is still made.
    failing = dataclasses.replace(control, outcome=Outcome.FAIL, fault=None)
    rejudged = {c.cell.id: c for c in blame_environment([failing, style])}
    assert rejudged[style.cell.id].blamed_on == control.cell.id
    assert outcome_label(rejudged[style.cell.id]) == "env (fail)"


def test_the_row_asks_the_new_process_for_the_cases_own_module_not_its_launchers(library_cases):
    case = library_cases["fake_library_copy"]
    assert case.launch.__module__ == "tcm_fake_library.kernels"  # the launcher is the library's
    request = edit_request(case, "raw")
    assert request.case_module == CASE_FILE
    assert list(request.sources) == [LIBRARY_KERNELS]  # the case file defines no kernel: it is imported, not run again


FIND_THE_CASE = """
import json, sys
from harness.execution.warm_cache import Edit, edited_case
print(edited_case(Edit.of(json.load(open(sys.argv[1])))).name)
"""


def test_a_case_in_a_package_given_as_a_folder_is_found_in_the_new_process_whose_path_lacks_that_folder(tmp_path):
    """The run makes the folder above the cases' package importable; the new process is told it (Edit.root) and uses it
    only where its own path does not find the package (it found `no module named ...` before)."""
    package = tmp_path / "folder_cases"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mine.py").write_text("import dataclasses\nimport fake_library_cases as library\n"
                                     "CASE = dataclasses.replace(library.CASES[0], name='packaged_copy')\n")
    registry.importable(USER_MODULES)  # where the library's cases are, as a run over them makes it
    loaded = registry.load([str(package)])
    assert not loaded.problems, loaded.problems
    edit = edit_request(loaded.cases["packaged_copy"], "raw")
    assert (edit.case_module, edit.root) == ("folder_cases.mine", str(tmp_path))
    (tmp_path / "request.json").write_text(json.dumps(dataclasses.asdict(edit)))
    env_path = os.pathsep.join(p for p in registry.search_path().split(os.pathsep) if os.path.abspath(p) != str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": env_path}
    proc = subprocess.run([sys.executable, "-c", FIND_THE_CASE, str(tmp_path / "request.json")], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "packaged_copy", proc.stderr[-2000:]

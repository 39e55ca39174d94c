"""Blame lands where it belongs: a mistake in a case's launcher is the case's error, named with its place and fix, and
fails the run while every other case still runs; a limit of Triton's interpreter is "not tested here" with its
reason; an error torch raises is still measured by the cell; a control that fails because the harness's own means
broke (a module it named that a new process cannot import, the C++ runner it cannot build) is the harness's error, and
so are its row's cells that fail there, never the environment's; a control torch refuses still makes its row's failing
cells the environment's. Planted cases: tests/harness/planted_blame.py, and two lone case files in
tests/harness/user_modules (shared_reference.py, reuses_reference.py)."""

import inspect
import json
import os
import sys
import time

import pytest
import torch

from harness.model.fingerprint import Fingerprint
from harness.model.judging import judged, outcome_label
from harness.model.outcome import Fault, Outcome, Stage
from harness.model.results import Results
from tests.harness import planted_blame
from tests.harness.conftest import run_python, runner_of

PLANTED_BLAME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted_blame.py")
USER_MODULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_modules")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STYLES = ("raw", "raw_autograd", "triton_op", "custom_op")
ROWS = ("eager", "compile_fullgraph")  # a compiled row, which Dynamo traces (the launch is not traced on the interpreter)
EXAMPLE = "float32 shape=(40,) seed=0"


@pytest.fixture(scope="module")
def blame_runner(run_zygote):
    yield from runner_of(PLANTED_BLAME, run_zygote)


@pytest.fixture
def run_cell(run_planted, blame_runner):
    return lambda case, wrapping="raw", row="eager": run_planted(case, wrapping, row, runner=blame_runner)


def judged_cells(cells):
    """The cells as the reports judge them, by id."""
    results = Results(fingerprint=Fingerprint.from_json({"mode": "cpu-interpreter"}), cells=list(cells))
    return {c.cell.id: c for c in judged(results).cells}


def line_of(function, text):
    """The line of `function`'s source (in its file) that holds `text`."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_a_kernel_launched_with_an_argument_missing_is_the_case_s_error_in_every_style_and_row_and_its_control_passes(run_cell):
    launch = line_of(planted_blame._copy_without_n_elements, "k.copy_kernel[")
    for style in STYLES:
        for row in ROWS:
            result = run_cell("blame_missing_argument", wrapping=style, row=row)
            where = (style, row, result.message)
            assert (result.outcome, result.stage, result.fault, result.error_type) == (Outcome.ERROR, Stage.RUN, "case", "TypeError"), where
            assert result.message.startswith(f"the launcher raises in plain eager, before any wrapping ({EXAMPLE}): TypeError: "), where
            assert "n_elements" in result.message, where  # what the kernel missed, in Triton's words
            assert result.message.endswith(f"planted_blame.py:{launch}, in _copy_without_n_elements: k.copy_kernel[(triton.cdiv(x.numel(), "
                                           "64),)](x, out, BLOCK=64)): fix the launch: pass the kernel each of its parameters"), where
            assert "_copy_without_n_elements" in result.detail and "Traceback" in result.detail, where
            assert outcome_label(result) == "case error @run"
    for row in ROWS:
        control = run_cell("blame_missing_argument", wrapping="control", row=row)
        assert control.outcome is Outcome.PASS, (row, control.message)


def test_a_launcher_that_raises_in_its_own_code_is_the_case_s_error_named_where_it_raised(run_cell):
    raised = line_of(planted_blame._require_multiple_of_64, "raise ValueError")
    for style, row in (("raw", "eager"), ("triton_op", "compile_fullgraph")):
        result = run_cell("blame_launcher_raises", wrapping=style, row=row)
        assert (result.outcome, result.stage, result.fault, result.error_type) == (Outcome.ERROR, Stage.RUN, "case", "ValueError")
        assert result.message.startswith(f"the launcher raises in plain eager, before any wrapping ({EXAMPLE}): "
                                          "ValueError: planted: 40 elements, not a multiple of 64 (raised at "), result.message
        assert result.message.endswith(f"planted_blame.py:{raised}, in _require_multiple_of_64): fix the launcher"), result.message
    assert run_cell("blame_launcher_raises", wrapping="control").outcome is Outcome.PASS
    # Python raising as it runs the launcher's own line (a kernel name that `k` lacks) is the case's error too
    misspelt = line_of(planted_blame._copy_through_a_misspelt_name, "k.copy_kernal[")
    result = run_cell("blame_misspelt_kernel", wrapping="triton_op", row="compile_fullgraph")
    assert (result.outcome, result.stage, result.fault, result.error_type) == (Outcome.ERROR, Stage.RUN, "case", "AttributeError")
    assert result.message.startswith(f"the launcher raises in plain eager, before any wrapping ({EXAMPLE}): AttributeError: "), result.message
    assert "'copy_kernal'" in result.message, result.message
    assert result.message.endswith(f"planted_blame.py:{misspelt}, in _copy_through_a_misspelt_name): fix the launcher"), result.message


def test_an_error_torch_raises_in_the_launcher_is_measured_by_the_cell_not_blamed_on_the_case(run_cell):
    # Out of memory, a device fault, a shape torch refuses: raised by torch, not by the case's own Python.
    result = run_cell("blame_torch_refuses")
    assert (result.outcome, result.stage, result.fault) == (Outcome.FAIL, Stage.RUN, None), result.message
    assert result.error_type == "RuntimeError" and "inconsistent tensor size" in result.message, result.message


@pytest.fixture(scope="module")
def two_case_files_runner(run_zygote):
    """A runner given shared_reference.py, then reuses_reference.py, whose case reuses the first file's module as the
    run imported it: under the name the harness gives a lone case file (harness.authoring.registry.LONE_FILE)."""
    yield from runner_of(os.path.join(USER_MODULES, "shared_reference.py"), run_zygote, os.path.join(USER_MODULES, "reuses_reference.py"))


def test_a_module_the_harness_named_that_the_new_process_cannot_import_makes_the_control_the_harnesss_error_not_a_broken_path(
        run_planted, two_case_files_runner):
    # The precompiled function holds the module it closes over by its name; the new process loads reuses_reference.py
    # alone, and has shared_reference only by its own name: no user's process has the harness's name for it.
    control = run_planted("reuses_reference", "control", "precompile_fresh", runner=two_case_files_runner, timeout=300.0)
    assert (control.outcome, control.fault, control.stage, control.error_type) == (
        Outcome.ERROR, "harness", Stage.LOAD, "harness.NotServed"), (control.outcome, control.stage, control.message)
    assert control.message == ("the new process met a module the harness named: tcm_user_shared_reference, the name the harness "
                               "gives a lone case file, could not be imported: ModuleNotFoundError: No module named "
                               "'tcm_user_shared_reference'"), control.message
    assert outcome_label(judged_cells([control])[control.cell.id]) == "harness error @load"  # not "FAILS: path broken here"


@pytest.fixture(scope="module")
def runner_without_cmake(run_zygote, tmp_path_factory):
    """A runner where the C++ runtime's runner cannot be built: no CMake on its PATH, and no runner built before in its
    cache folder."""
    empty = tmp_path_factory.mktemp("no-cmake")
    yield from runner_of(PLANTED_BLAME, run_zygote, env={"PATH": str(empty), "XDG_CACHE_HOME": str(empty)})


def test_a_cpp_runner_the_harness_cannot_build_is_the_harnesss_error_in_the_control_and_every_style_never_env(run_planted,
                                                                                                          runner_without_cmake):
    results = [run_planted("blame_ok", style, "aoti_cpp_strict", runner=runner_without_cmake)
               for style in ("control", "custom_op", "triton_op")]
    for result in results:
        where = (result.cell.id, result.outcome, result.stage, result.message)
        assert (result.outcome, result.fault, result.stage, result.error_type) == (
            Outcome.ERROR, "harness", Stage.CPP_BUILD, "harness.BuildFailure"), where
        assert result.message.startswith("cmake not found: install CMake"), where
    for cell in judged_cells(results).values():
        assert (outcome_label(cell), cell.blamed_on, cell.fault) == ("harness error @cpp_build", None, Fault.HARNESS), cell.cell.id


def test_a_control_torch_refuses_on_a_path_still_makes_its_rows_failing_cells_the_environments(run_cell):
    control, raw = (run_cell("blame_graph_break", wrapping=style, row="compile_fullgraph") for style in ("control", "raw"))
    for result in (control, raw):
        assert (result.outcome, result.stage, result.fault) == (Outcome.FAIL, Stage.COMPILE, None), (result.cell.id, result.message)
    cells = judged_cells([control, raw])
    assert outcome_label(cells[raw.cell.id]) == "env (fail)" and cells[raw.cell.id].blamed_on == control.cell.id
    assert outcome_label(cells[control.cell.id]) == "fail @compile"


def test_a_healthy_case_beside_them_passes_every_style(run_cell):
    for style in (*STYLES, "control"):
        result = run_cell("blame_ok", wrapping=style)
        assert result.outcome is Outcome.PASS, (style, result.message)


def test_a_kernel_calling_a_libdevice_function_the_interpreter_lacks_is_not_tested_here_and_its_control_runs(run_cell):
    # Triton's interpreter has no device library: a limit of the machine, said as such, never a failure counted
    # against a style. On a GPU the compiler supplies the function and the cell runs.
    for style in STYLES:
        result = run_cell("blame_libdevice", wrapping=style)
        if torch.cuda.is_available():
            assert result.outcome is Outcome.PASS, (style, result.message)
            continue
        assert result.outcome is Outcome.SKIPPED, (style, result.outcome, result.message)
        assert result.message.startswith("not tested here: Triton's interpreter cannot run triton.language.extra.libdevice.tanh, which "
                                          "tanh_kernel calls through _tanh_of (probed once a run with a trivial kernel calling it: "), result.message
    assert run_cell("blame_libdevice", wrapping="control").outcome is Outcome.PASS


def test_a_case_whose_launcher_raises_fails_the_run_and_every_other_case_still_runs(tmp_path):
    cells = ["blame_missing_argument-raw-eager", "blame_missing_argument-control-eager", "blame_ok-raw-eager", "blame_ok-triton_op-eager"]
    reports = tmp_path / "reports"
    proc = run_python(
        [sys.executable, "-m", "harness", "run", "-n", "0", "-p", "no:cacheprovider", f"--cases={PLANTED_BLAME}",
         f"--report-dir={reports}", "--matrix-profile=quick", "-k", " or ".join(f"test_cell[{c}]" for c in cells)],
        cwd=ROOT, timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert ("blame_missing_argument-raw-eager: the case's own code raised at run: TypeError: the launcher raises in plain eager, "
            "before any wrapping") in proc.stdout, proc.stdout[-3000:]
    recorded = {c["cell"]: c for c in json.loads((reports / "results.json").read_text())["cells"]}
    assert sorted(recorded) == sorted(cells)  # every cell ran, the broken case's too
    broken = recorded["blame_missing_argument-raw-eager"]
    assert (broken["outcome"], broken["stage"], broken["fault"]) == ("error", "run", "case")
    for cell in ("blame_missing_argument-control-eager", "blame_ok-raw-eager", "blame_ok-triton_op-eager"):
        assert recorded[cell]["outcome"] == "pass", (cell, recorded[cell]["message"])


def test_a_launcher_or_reference_that_hangs_in_plain_eager_is_the_case_s_error_with_its_fix_after_the_check_s_own_deadline(tmp_path):
    """The harness calls the reference and the launcher once in plain eager before the cell's path: one that never returns
    is ended at that check's deadline (--cell-timeout plain_eager=S), not the cell's, and charted as the case's error in
    every style and row, not as the styles' timeouts; where only the launcher hangs, the control, which runs no
    launcher, passes."""
    cells = [f"blame_launcher_hangs-{style}-{row}" for style in ("raw", "triton_op", "control") for row in ROWS] + ["blame_ok-raw-eager"]
    hung_reference = ["blame_reference_hangs-raw-eager", "blame_reference_hangs-control-eager"]
    cells += hung_reference
    reports = tmp_path / "reports"
    began = time.monotonic()
    proc = run_python(
        [sys.executable, "-m", "harness", "run", "-n", "0", "-p", "no:cacheprovider", f"--cases={PLANTED_BLAME}",
         f"--report-dir={reports}", "--matrix-profile=quick", "--cell-timeout=plain_eager=3", "--confirm=none",
         "-k", " or ".join(f"test_cell[{c}]" for c in cells)],
        cwd=ROOT, timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]  # a case's error fails the run, as one that raises
    recorded = {c["cell"]: c for c in json.loads((reports / "results.json").read_text())["cells"]}
    assert sorted(recorded) == sorted(cells)
    for cell in hung_reference:  # a reference that never returns: the case's error in every cell, the control's too
        got = recorded[cell]
        assert (got["outcome"], got["stage"], got["fault"]) == ("error", "reference", "case"), (cell, got["outcome"], got["message"])
        assert got["message"].startswith("the case's reference did not return within 3 s, called once in plain eager on the "
                                         "case's example input, before the cell's path: every style and row meets this hang"), got["message"]
    for cell in set(cells) - set(hung_reference):
        got = recorded[cell]
        if "-control-" in cell or cell.startswith("blame_ok"):
            assert got["outcome"] == "pass", (cell, got["message"])
            continue
        assert (got["outcome"], got["stage"], got["fault"]) == ("error", "run", "case"), (cell, got["outcome"], got["message"])
        assert got["message"].startswith("the launcher did not return within 3 s, called once in plain eager on the case's "
                                         "example input, before any compile or wrapping: every style and row meets this hang, "
                                         "so it is the case's. Fix: make the launcher return"), got["message"]
        assert got["message"].endswith("give it longer with --cell-timeout plain_eager=SECONDS")
    assert time.monotonic() - began < 300  # six checks ended at 3 s each, not at the rows' own limits (300 s, 600 s)
    matrix = (reports / "MATRIX.md").read_text()
    assert "| timeout @" not in matrix and matrix.count("| `blame_launcher_hangs-") == 4, matrix  # each a case error, none a timeout


def _caught(function, *args):
    try:
        function(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is what the test reads
        return exc
    raise AssertionError(f"{function.__name__} raised nothing")


def test_the_case_s_own_raise_or_line_is_its_error_and_what_torch_raises_inside_it_is_not():
    from harness.execution.blame import raised_by_case_code

    def refuse_the_size(x):
        raise ValueError("refused")

    def read_a_missing_meta_key(meta):
        return meta["BLOCK_SIZE"]  # a grid lambda's typo: Python raises running the case's line

    def view_with_a_wrong_shape(x):
        return x.view(7)  # torch's error, from a call into torch

    def add_a_longer_tensor(x):
        return x + torch.ones(x.numel() + 1)  # torch's error, from its operator

    here = frozenset({os.path.normcase(os.path.realpath(__file__))})
    refused = raised_by_case_code(_caught(refuse_the_size, torch.ones(3)), here)
    assert (refused.function, refused.launch) == ("refuse_the_size", False)
    assert refused.lineno == line_of(refuse_the_size, "raise ValueError")
    assert raised_by_case_code(_caught(read_a_missing_meta_key, {"BLOCK": 64}), here).function == "read_a_missing_meta_key"
    assert raised_by_case_code(_caught(view_with_a_wrong_shape, torch.ones(3)), here) is None
    assert raised_by_case_code(_caught(add_a_longer_tensor, torch.ones(3)), here) is None
    assert raised_by_case_code(_caught(refuse_the_size, torch.ones(3)), frozenset()) is None  # not the case's file: not its error

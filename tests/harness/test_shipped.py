"""A library adopted as it is: its launcher, calling its kernels as module globals, through every style; its
own ops as shipped, in a column of their own. The planted library is tests/harness/planted_library."""

import os
import re

import pytest
import torch

from harness.authoring import registry
from harness.authoring.case import Case
from harness.authoring.checks import check
from harness.execution import wrapping
from harness.model.cell import Cell, matrix_cells
from harness.model.columns import GENERATED_STYLES, ShippedKind, Wrapping
from harness.model.errors import CaseError
from harness.model.outcome import CellResult, Outcome, Stage
from harness.model.results import Results
from harness.model.rows import Row
from harness.reporting.report import matrix
from harness.reporting.support import support_chart
from tests.harness import planted_shipped
from tests.harness.conftest import runner_of
from tests.harness.planted_library import kernels as library_kernels
from tests.harness.test_units import FINGERPRINT

SHIPPED_CASES = os.path.join(os.path.dirname(__file__), "planted_shipped.py")


@pytest.fixture(scope="module")
def shipped_runner(run_zygote):
    yield from runner_of(SHIPPED_CASES, run_zygote)


@pytest.fixture
def run_shipped(run_planted, shipped_runner):
    return lambda case, wrapping, row: run_planted(case, wrapping, row, runner=shipped_runner)


@pytest.fixture(scope="module")
def cases():
    return {case.name: case for case in planted_shipped.CASES}


def test_a_globals_launcher_fares_in_every_style_and_row_as_its_namespace_twin_does(run_shipped):
    # `library_op` hands the library's own launcher over unchanged (torch.empty_like, the kernel a global of a
    # helper in another module); `library_k_form` is the same launch written for the harness's `k`.
    for style in GENERATED_STYLES:
        for row in ("eager", "compile_fullgraph", "export_nonstrict", "train_eager", "opcheck", "tensor_subclass"):
            globals_form, twin = run_shipped("library_op", style.value, row), run_shipped("library_k_form", style.value, row)
            assert (globals_form.outcome, globals_form.stage) == (twin.outcome, twin.stage), (style, row, globals_form.message, twin.message)
        assert run_shipped("library_op", style.value, "eager").outcome is Outcome.PASS


def test_a_globals_launcher_launches_what_stands_for_its_kernel_through_its_helpers_and_leaves_the_library_as_it_was(cases):
    case = cases["library_op"]
    launched = []

    class Recorder:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append(len(args))

    x = torch.randn(10)
    wrapping.launch_with(case.launch, case.kernels, {"scale_kernel": Recorder()}, x)
    assert launched == [4]  # the helper _launch_scale, in the library's kernels module, launched the recorder
    assert library_kernels.scale_kernel is case.kernels[0]  # the library's module still holds its kernel


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1", reason="torch finds compiled kernels only: interpreted ones are not JITFunctions")
def test_the_triton_op_body_names_a_globals_launcher_s_kernels_so_that_torch_finds_them(cases):
    # torch hashes the kernels it finds in a triton_op's body into its compile caches: a kernel it cannot see
    # would not invalidate them when edited.
    from torch._library.triton import get_triton_kernels_for_op

    wrapping.operator(cases["library_op"], Wrapping.TRITON_OP)
    assert get_triton_kernels_for_op("tcm::library_op_triton_op") == [library_kernels.scale_kernel]


def test_a_shipped_operator_whose_fake_has_the_wrong_shape_is_caught_where_it_is_traced_while_its_eager_cell_passes(run_shipped):
    assert run_shipped("library_wrong_fake", "shipped", "eager").outcome is Outcome.PASS
    compiled = run_shipped("library_wrong_fake", "shipped", "compile_fullgraph")
    assert compiled.outcome is Outcome.FAIL and compiled.stage is Stage.RUN
    assert "expected size 40==41" in compiled.message  # Inductor's check of the fake's shape against the kernel's
    checked = run_shipped("library_wrong_fake", "shipped", "opcheck")
    assert checked.outcome is Outcome.FAIL and "test_faketensor" in checked.message
    # The same library's operator with a right fake passes both: what is caught is the fake, not the column.
    assert run_shipped("library_op", "shipped", "compile_fullgraph").outcome is Outcome.PASS
    assert run_shipped("library_op", "shipped", "opcheck").outcome is Outcome.PASS


def test_each_kind_of_shipped_op_runs_as_its_users_call_it(run_shipped):
    for case in ("library_op", "library_function", "library_plain"):
        assert run_shipped(case, "shipped", "eager").outcome is Outcome.PASS, case
    # The autograd.Function ships a backward, the plain function none: training says so.
    assert run_shipped("library_function", "shipped", "train_eager").outcome is Outcome.PASS
    lost = run_shipped("library_plain", "shipped", "train_eager")
    assert lost.outcome is Outcome.WRONG and "missing (None)" in lost.mismatched


def test_opcheck_and_the_cpu_fallback_apply_to_a_shipped_op_only_when_it_is_a_torch_library_operator(cases):
    kinds = {name: case.shipped_kind for name, case in cases.items()}
    assert kinds == {"library_op": ShippedKind.OPERATOR, "library_wrong_fake": ShippedKind.OPERATOR,
                     "library_function": ShippedKind.AUTOGRAD_FUNCTION, "library_plain": ShippedKind.FUNCTION, "library_k_form": None}
    for row in (Row.OPCHECK, Row.CPU_FALLBACK):
        assert row.spec.applies(cases["library_op"], Wrapping.SHIPPED) is None
        assert "autograd.Function" in row.spec.applies(cases["library_function"], Wrapping.SHIPPED)
        assert "plain function" in row.spec.applies(cases["library_plain"], Wrapping.SHIPPED)


@pytest.mark.parametrize("case", ["library_op", "library_wrong_fake"])
def test_a_shipped_operator_s_opcheck_reproducer_checks_the_library_s_own_operator_and_ends_as_the_cell_did(run_shipped, case, tmp_path):
    # The reproducer named an operator of the harness's namespace that only the generated styles register, and failed
    # (AttributeError) where the cell, which checks the library's own operator, passed.
    from harness.tools import reproduce
    from tests.harness.test_why_cells_fail import reproduce_cell

    result = run_shipped(case, "shipped", "opcheck")
    got, output, path = reproduce_cell(result, [SHIPPED_CASES], tmp_path)
    assert "artifact = opchecked(case.shipped)" in open(path).read()  # the row's path (paths.subsystems) on the library's operator
    assert result.outcome is {"library_op": Outcome.PASS, "library_wrong_fake": Outcome.FAIL}[case], (result.outcome, result.message)
    assert reproduce.Checked(result, path, got, 0.0, output).agreement == "reproduced", output[-3000:]
    if result.outcome is Outcome.FAIL:  # the wrong fake: opcheck's own test of it fails, as the cell's did
        assert "test_faketensor" in got.message and "test_faketensor" in result.message, (got.message, result.message)


def test_the_shipped_column_exists_only_for_the_cases_that_name_their_library_s_op(cases):
    cells = matrix_cells(cases)
    shipped = {c.case for c in cells if c.wrapping is Wrapping.SHIPPED}
    assert shipped == {"library_op", "library_wrong_fake", "library_function", "library_plain"}
    assert len([c for c in cells if c.case == "library_k_form"]) == len(Row) * (len(Wrapping) - 1)


def test_a_kernel_the_globals_launcher_never_reads_is_the_case_s_error_with_its_fix(cases):
    import triton
    import triton.language as tl

    @triton.jit
    def unused_kernel(x_ptr, BLOCK: tl.constexpr):
        pass

    case = Case(**{**{f: getattr(cases["library_op"], f) for f in ("launch", "reference", "make_inputs", "shapes", "example_shape")},
                   "name": "unreached", "kernels": (library_kernels.scale_kernel, unused_kernel)})
    with pytest.raises(CaseError, match="never reads unused_kernel as a global .* call k.unused_kernel"):
        check(case)


def test_a_launcher_without_annotations_takes_its_schema_from_the_case(cases):
    def unannotated(x):
        return library_kernels.scale_forward(x, 2.0)

    base = {f: getattr(cases["library_op"], f) for f in ("kernels", "reference", "make_inputs", "shapes", "example_shape")}
    with pytest.raises(CaseError, match="needs a type annotation .* or give the case schema="):
        check(Case(name="unannotated", launch=unannotated, **base))
    case = Case(name="unannotated", launch=unannotated, schema="(Tensor x) -> Tensor", **base)
    check(case)
    assert str(case.signature) == "(x: torch.Tensor) -> torch.Tensor"
    assert str(wrapping.operator(case, Wrapping.CUSTOM_OP)._opoverload._schema) == "tcm::unannotated_custom_op(Tensor x) -> Tensor"


def test_the_charts_show_the_shipped_column_and_its_section_only_where_a_case_ships_its_op():
    shipped = [CellResult(Cell("lib", w, Row.EAGER), Outcome.PASS) for w in Wrapping]
    shipped.append(CellResult(Cell("lib", Wrapping.SHIPPED, Row.COMPILE_FULLGRAPH), Outcome.FAIL, stage=Stage.RUN, message="expected size"))
    shipped.append(CellResult(Cell("lib", Wrapping.CUSTOM_OP, Row.COMPILE_FULLGRAPH), Outcome.PASS))
    chart = support_chart(Results(fingerprint=FINGERPRINT, cells=shipped))
    assert "the library's own op (shipped)" in chart
    assert "- `lib`: passes 1 of the 2 rows counted; fails on [compile_fullgraph](MATRIX.md#compile_fullgraph) (fail @run; " \
           "passes as custom_op + register_fake)" in chart
    assert re.search(r"\| custom_op +\| shipped +\| control +\|", matrix(Results(fingerprint=FINGERPRINT, cells=shipped)))
    plain = [c for c in shipped if c.wrapping is not Wrapping.SHIPPED]
    assert "shipped" not in support_chart(Results(fingerprint=FINGERPRINT, cells=plain))
    # a library that runs on a GPU only, charted on a CPU: no "0 of the 0"
    untested = [CellResult(Cell("gpu_lib", Wrapping.SHIPPED, row), Outcome.SKIPPED, message="needs a GPU") for row in (Row.EAGER, Row.OPCHECK)]
    assert "- `gpu_lib`: no row counted here (2 cells not tested: [MATRIX.md](MATRIX.md) says why)" in support_chart(
        Results(fingerprint=FINGERPRINT, cells=untested))
    assert "shipped" not in matrix(Results(fingerprint=FINGERPRINT, cells=plain))


def test_cases_over_an_installed_style_package_load_by_its_relative_imports():
    loaded = registry.load([SHIPPED_CASES])
    assert not loaded.problems
    assert set(loaded.cases) == {"library_op", "library_wrong_fake", "library_function", "library_plain", "library_k_form"}

"""A library adopted as it ships (tests/harness/planted_norm_library, its cases in planted_norm_cases.py): a launcher
that returns a tuple, a backward given what the forward saved, two outputs with their gradients, and a backward that an
operator may not be (aliases, writes into its arguments) charted as the case's error with the fix."""

import os

import pytest

from harness.model.outcome import Fault, Outcome
from harness.model.results import load

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted_norm_cases.py")
GENERATED = ("raw_autograd", "triton_op", "custom_op")


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    from tests.harness.test_trustworthy_reports import _matrix

    tmp = tmp_path_factory.mktemp("adoption")
    proc = _matrix(tmp, f"--cases={CASES}", "-k", "train_eager or (eager and (rms_norm or add_aliased))", f"--report-dir={tmp / 'r'}")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]  # the planted mistakes are errors
    return {c.cell.id: c for c in load(str(tmp / "r" / "results.json")).cells}


def test_a_launcher_returning_its_output_and_what_the_backward_needs_is_used_as_it_is(cells):
    """rms_norm_fwd returns (y, rstd): every style gives y, and the library's backward, given rstd by name, trains."""
    for style in ("control", *GENERATED, "shipped"):
        for row in ("eager", "train_eager"):
            cell = cells[f"lib_rms_norm-{style}-{row}"]
            assert cell.outcome is Outcome.PASS, (cell.cell.id, cell.message)
    # the raw launcher gives y too (compared with the reference's y), and no gradient: the chart says so
    assert cells["lib_rms_norm-raw-eager"].outcome is Outcome.PASS
    assert cells["lib_rms_norm-raw-train_eager"].message.startswith("gradient of input 'x' differs from the reference: it is missing")


def test_two_outputs_each_take_their_gradient(cells):
    """sincos's backward takes both outputs' gradients and both results; a wrong pairing would fail the reference."""
    for style in ("control", *GENERATED, "shipped"):
        cell = cells[f"lib_sincos-{style}-train_eager"]
        assert cell.outcome is Outcome.PASS, (cell.cell.id, cell.message)


@pytest.mark.parametrize("case, problem", [
    ("lib_add_aliased", "the backward returns one tensor as the gradients of 'a' and 'b'"),
    ("lib_add_into_input", "the backward writes into its argument 'a'; writes into its argument 'b'"),
])
def test_a_backward_an_operator_may_not_be_is_the_cases_error_with_the_fix(cells, case, problem):
    for style in ("triton_op", "custom_op"):
        cell = cells[f"{case}-{style}-train_eager"]
        assert (cell.outcome, cell.fault) == (Outcome.ERROR, Fault.CASE), (cell.cell.id, cell.outcome, cell.message)
        assert cell.message.startswith(problem) and "give Backward a function that calls the library's backward" in cell.message
        if case == "lib_add_aliased":
            assert cells[f"{case}-{style}-eager"].outcome is Outcome.PASS  # the forward is not blamed
    # a Function's backward may alias and write: autograd takes it, as it takes the library's own Function
    assert cells[f"{case}-raw_autograd-train_eager"].outcome is Outcome.PASS

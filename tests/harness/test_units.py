"""The harness's pure parts: ids, case validation, comparison, results files, blame and the chart."""

import dataclasses
import json
import math
import os
import sys
import typing

import pytest
import torch
from hypothesis import strategies as st

from harness import Backward, Case, CaseError
from harness.__main__ import main as cli
from harness.authoring import inputs, registry
from harness.authoring.checks import check
from harness.execution.numerics import assert_close
from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.errors import Mismatch, ResultsError
from harness.model.fingerprint import Fingerprint, GitCommit, Gpu
from harness.model.judging import blame_environment, judged, outcome_label
from harness.model.messages import CellRequest, Event, EventKind
from harness.model.outcome import CellResult, Fault, InGraph, Outcome, Stage, Timings
from harness.model.results import VERSION, Results, dumps, load, merge, save
from harness.model.rows import Row
from harness.model.settings import PROFILES, Settings
from harness.reporting.support import support_chart
from tests.harness.conftest import PLANTED
from tests.harness.planted import CASES, _launch_with, copy_kernel


def test_cell_ids_round_trip_and_bad_ids_say_what_is_expected():
    cell = Cell("add_autotuned", Wrapping.TRITON_OP, Row.EXPORT_NONSTRICT)
    assert cell.id == "add_autotuned-triton_op-export_nonstrict"
    assert Cell.parse(cell.id) == cell
    with pytest.raises(ValueError, match="expected CASE-WRAPPING-ROW"):
        Cell.parse("add-triton_op-export_sideways")


def _launch_without_k(x: torch.Tensor) -> torch.Tensor:
    return x


def _launch_with_scale(k, x: torch.Tensor, scale: float) -> torch.Tensor:
    return x * scale


def _launch_with_a_library_default(k, x: torch.Tensor, output_contiguous: bool = False) -> torch.Tensor:
    return x


def _launch_returning_two(k, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x, x


def _launch_returning_a_block_size(k, x: torch.Tensor) -> tuple[torch.Tensor, int]:
    return x, 64  # a library's launcher hands its backward the BLOCK_SIZE it chose


def _launch_returning_an_optional(k, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    return x, None


def _case(**overrides):
    fields = dict(
        name="good", kernels=(copy_kernel,), launch=_launch_with("copy_kernel"), reference=lambda x: x.clone(),
        make_inputs=lambda shape, dtype, device, gen: (torch.zeros(shape, dtype=dtype),),
        shapes=inputs.shapes(64), example_shape=(8,),
    )
    fields.update(overrides)
    return Case(**fields)


def _launch_annotated_as_strings(k, x: "torch.Tensor", bias: "typing.Optional[torch.Tensor]") -> "torch.Tensor":
    return x if bias is None else x + bias  # the annotations a module with `from __future__ import annotations` has


def _launch_annotated_with_an_unknown_name(k, x: "Tensr") -> "torch.Tensor":
    return x


def test_string_annotations_are_read_as_the_types_they_name_and_an_unknown_name_is_the_cases_problem():
    case = _case(launch=_launch_annotated_as_strings, reference=lambda x, bias: x if bias is None else x + bias,
                 make_inputs=lambda shape, dtype, device, gen: (torch.zeros(shape, dtype=dtype), torch.ones(shape, dtype=dtype)))
    check(case)
    assert case.optional_inputs == {"bias"}
    assert [p.annotation for p in case.input_parameters()] == [torch.Tensor, typing.Optional[torch.Tensor]]
    with pytest.raises(CaseError, match="case 'good': launcher's type annotations do not evaluate \\(NameError: name 'Tensr' "
                                        "is not defined\\): import what they name in the case's module"):
        check(_case(launch=_launch_annotated_with_an_unknown_name))


@pytest.mark.parametrize(
    "overrides, problem",
    [
        (dict(name="Bad-Name"), "lower_snake_case"),
        (dict(kernels=()), "kernels is empty"),
        (dict(kernels=(len,)), "not a Triton kernel"),
        (dict(example_shape=(1,)), "batch"),
        (dict(dtypes=(torch.int32,)), "no default tolerance"),
        (dict(launch=lambda k, x: x), "needs a type annotation"),
        (dict(reference=lambda x, y: x), "reference cannot take"),
        (dict(launch=_launch_with_a_library_default),  # a library's launcher, with a trailing parameter left at its default
         "reference cannot take the launcher's 2 inputs: .*; the launcher's parameters with defaults \\(output_contiguous\\) "
         "count as inputs: give schema= without them \\(they keep their defaults\\), declare them in scalars="),
        (dict(mutates=frozenset({"y"})), "not launcher parameters"),
        (dict(shapes=[(1,)]), "hypothesis strategy"),
        (dict(max_batch=64, benchmark_batch=65), "benchmark_batch 65 must lie in 1..max_batch"),
        (dict(reference=None), "no reference: give reference="),
        (dict(launch=_launch_without_k), "the launcher never reads copy_kernel as a global .* or take the namespace first"),
        (dict(dtypes=("float16",)), "unknown dtype 'float16': give torch dtypes"),
        (dict(make_inputs=inputs.randn(2)), "make_inputs gives 2 inputs but the launcher takes 1"),
        (dict(make_inputs=lambda shape, dtype, device, gen: 1 / 0), "make_inputs fails on example_shape"),
        (dict(scalars={"alpha": st.floats(0, 1)}, example_scalars={"alpha": 0.5}), "must name the launcher's last parameters"),
        (dict(unbatched=frozenset({"w"})), "unbatched names \\['w'\\], which are not launcher parameters"),
        (dict(requires="sm_90"), "requires must be a function"),
        (dict(backward=Backward(lambda k, grad, x: grad, takes=("grad", "rstd"))),
         "Backward takes 'rstd', which is none of what a backward can be given: grad, x"),
        (dict(backward=Backward(lambda k, grad: grad)), "backward cannot take the 2 arguments it is given \\(grad, x\\): .*takes="),
        (dict(backward=Backward(lambda k, grad, x: grad, gives=("y",))), "Backward gives 'y', which is not a tensor input \\(x\\)"),
        (dict(backward=Backward(lambda grad: grad, kernels=(copy_kernel,), takes=("grad",))),
         "Backward gives the gradient of x without taking it: the operator styles register a backward with kernels as an operator"),
        (dict(returns=("y", "x")), "returns names 'x': give each result a Python name that is not an input's"),
        (dict(returns=("y", "rstd")), "returns names 2 results but the launcher is annotated to return one tensor"),
        (dict(outputs=("y",)), "outputs= picks among the launcher's results: name them all first"),
        (dict(launch=_launch_returning_a_block_size, returns=("y", "block")),
         "returns names 'block', which the launcher is annotated to return as int: the wrapping styles carry only tensors "
         "between a forward and its backward .*return 'block' as a tensor, or compute it where it is needed"),
        (dict(launch=_launch_returning_two, returns=("y", "rstd"), outputs=("z",)), "outputs \\['z'\\] must name results of returns"),
        # 0.01 is no float32: hypothesis refuses the strategy when it first draws from it
        (dict(launch=_launch_with_scale, reference=lambda x, scale: x * scale,
              scalars={"scale": st.floats(0.01, 0.5, width=32)}, example_scalars={"scale": 0.25}),
         "scalars\\['scale'\\]: hypothesis cannot draw from .*InvalidArgument: min_value=0.01 cannot be exactly represented"),
        (dict(shapes=st.just([4])), "shapes drew \\[4\\]: it must draw tuples of ints"),
        (dict(make_inputs=lambda shape, dtype, device, gen: (torch.zeros(shape[0] - 1, 1 // (shape[0] - 1)),)),
         "make_inputs fails on shape \\(1,\\), which shapes draws: ZeroDivisionError"),
    ],
)
def test_malformed_cases_name_the_case_and_the_fix(overrides, problem):
    with pytest.raises(CaseError, match=problem) as info:
        check(_case(**overrides))
    assert "case '" in str(info.value)


def test_a_launcher_may_return_an_optional_tensor_beside_its_tensor():
    check(_case(launch=_launch_returning_an_optional, returns=("y", "maybe"), reference=lambda x: (x.clone(), None)))


def test_every_builtin_case_loads_and_duplicates_are_reported():
    loaded = registry.load()
    assert loaded.problems == []
    assert set(loaded.cases) == {
        "add", "add_autotuned", "constexpr_global", "heuristics_autotune", "layernorm", "matmul", "maybe_empty", "scale_inplace",
        "scaled_add", "silu", "sin", "softmax_rows", "strided", "tma_add", "two_outputs",
        "autotune_sizes", "embedding_gather", "grid_2d", "histogram_atomic", "mask_select", "optional_bias",
        "autotune_pre_hook", "autotune_optional_none", "while_loop", "bitcast", "dtype_arg", "views", "block_sums", "device_guard",
        "mm_then_kernel", "sincos_grad", "column_sum_grad", "tma_device", "fp8_cast",
    }
    twice = registry.load([PLANTED, PLANTED])
    assert set(twice.cases) == set(registry.load([PLANTED]).cases)  # the first of each name is kept
    assert twice.problems and all("defined twice" in p.message for p in twice.problems)


def test_compare_checks_values_shapes_and_declared_mutation():
    case = CASES[0]
    x = torch.ones(4)
    assert_close(case, torch.float32, [x], [x.clone()], ["out"])
    with pytest.raises(Mismatch) as info:
        assert_close(case, torch.float32, [x], [x + 1], ["out"])
    assert info.value.max_error == 1.0 and info.value.mismatched == "4 of 4 elements"
    with pytest.raises(Mismatch, match="shape/dtype"):
        assert_close(case, torch.float32, [x], [torch.ones(5)], ["out"])
    with pytest.raises(Mismatch) as info:
        assert_close(case, torch.float32, [x], [torch.full((4,), math.nan)], ["out"])
    assert "never written" in info.value.mismatched


def _result(cell_id, outcome=Outcome.PASS, stage=None):
    return CellResult(Cell.parse(cell_id), outcome, stage=stage)


FINGERPRINT = Fingerprint.from_json({"mode": "gpu", "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0", "gpu": {"name": "H200"}, "compiler": {"CXX": "g++"}})


def test_environment_blame_needs_the_control_to_fail_no_later_than_the_cell():
    cells = [
        _result("add-control-aoti_strict", Outcome.CRASH, Stage.AOT_LOAD),
        _result("add-triton_op-aoti_strict", Outcome.CRASH, Stage.AOT_LOAD),
        _result("add-raw-aoti_strict", Outcome.FAIL, Stage.EXPORT),
        _result("add-custom_op-aoti_strict"),
        _result("add-raw-export_strict", Outcome.FAIL, Stage.EXPORT),
    ]
    blamed = {c.cell.id: c.blamed_on for c in blame_environment(cells)}
    assert blamed["add-triton_op-aoti_strict"] == "add-control-aoti_strict"
    assert blamed["add-raw-aoti_strict"] is None  # failed before the control did: the wrapping's fault
    assert blamed["add-custom_op-aoti_strict"] is None
    assert blamed["add-raw-export_strict"] is None  # the control passes export (no control cell: no blame)
    chart = support_chart(Results(fingerprint=FINGERPRINT, cells=cells))
    assert "**FAILS (1/1): path broken here**: CRASH @aot_load" in chart
    assert "n/a: environment; 1 env: control fails too" in chart



def _harness_error(cell_id, stage, error_type, message):
    return CellResult(Cell.parse(cell_id), Outcome.ERROR, stage=stage, fault=Fault.HARNESS, error_type=error_type, message=message)


def test_a_control_that_is_the_harnesss_error_makes_the_cells_failing_at_its_stage_or_later_the_harnesss_errors_never_env():
    named = "the new process met a module the harness named: tcm_user_a, the name the harness gives a lone case file, ..."
    cells = [
        _harness_error("add-control-precompile_fresh", Stage.LOAD, "harness.NotServed", named),
        CellResult(Cell.parse("add-custom_op-precompile_fresh"), Outcome.FAIL, stage=Stage.LOAD, error_type="harness.SavedRunFailed",
                   message="ModuleNotFoundError: No module named 'tcm_user_a'"),
        CellResult(Cell.parse("add-triton_op-precompile_fresh"), Outcome.CRASH, stage=Stage.RUN, signal="SIGSEGV"),
        _result("add-raw-precompile_fresh", Outcome.FAIL, Stage.COMPILE),  # failed before the control's stage: its own
        _result("add-shipped-precompile_fresh"),
        # A C++ runner that cannot be built is the harness's error in every cell of its rows, the control's too.
        _harness_error("add-control-aoti_cpp_strict", Stage.CPP_BUILD, "harness.BuildFailure", "cmake not found"),
        _result("add-custom_op-aoti_cpp_strict", Outcome.FAIL, Stage.AOT_LOAD),
        _result("add-triton_op-aoti_cpp_strict", Outcome.FAIL, Stage.WRAP),  # wrapping fails before the build
        # the environment's: the control fails on the path itself
        _result("add-control-aoti_strict", Outcome.FAIL, Stage.AOT_COMPILE),
        _result("add-custom_op-aoti_strict", Outcome.FAIL, Stage.AOT_COMPILE),
        # the case's own error is no finding about the harness or the path: the styles keep theirs
        CellResult(Cell.parse("add-control-export_strict"), Outcome.ERROR, stage=Stage.REFERENCE, fault=Fault.CASE, message="planted"),
        _result("add-custom_op-export_strict", Outcome.FAIL, Stage.RUN),
    ]
    judged_cells = {c.cell.id: c for c in judged(Results(fingerprint=FINGERPRINT, cells=cells)).cells}
    labels = {cell: outcome_label(c) for cell, c in judged_cells.items()}
    assert labels == {
        "add-control-precompile_fresh": "harness error @load", "add-custom_op-precompile_fresh": "harness error @load",
        "add-triton_op-precompile_fresh": "harness error @run", "add-raw-precompile_fresh": "fail @compile",
        "add-shipped-precompile_fresh": "pass",
        "add-control-aoti_cpp_strict": "harness error @cpp_build", "add-custom_op-aoti_cpp_strict": "harness error @aot_load",
        "add-triton_op-aoti_cpp_strict": "fail @wrap",
        "add-control-aoti_strict": "fail @aot_compile", "add-custom_op-aoti_strict": "env (fail)",
        "add-control-export_strict": "case error @reference", "add-custom_op-export_strict": "fail @run",
    }
    made = judged_cells["add-custom_op-precompile_fresh"]
    assert (made.fault, made.blamed_on, made.error_type) == (Fault.HARNESS, None, "harness.SavedRunFailed")
    assert made.message == ("the control add-control-precompile_fresh failed by the harness's own fault at load, so this cell's "
                            f"failure there or later is not measured: harness.NotServed: {named}")
    assert made.detail.endswith("This cell's own failure: fail @load: harness.SavedRunFailed: ModuleNotFoundError: No module "
                                "named 'tcm_user_a'"), made.detail
    again = judged(Results(fingerprint=FINGERPRINT, cells=list(judged_cells.values()))).cells
    assert again == list(judged_cells.values())  # judging what was judged (a results file's cells) changes nothing
    chart = support_chart(Results(fingerprint=FINGERPRINT, cells=cells))
    assert "n/a; harness error @load (1)" in chart  # the control is no pass, nor a path broken here
    assert "n/a; 1 harness error" in chart and "env: control fails too" in chart


def test_support_chart_counts_yes_no_partial():
    cells = [
        _result("a-raw-eager"), _result("b-raw-eager"),
        _result("a-triton_op-eager"), _result("b-triton_op-eager", Outcome.WRONG, Stage.RUN),
        _result("a-custom_op-eager", Outcome.FAIL, Stage.RUN), _result("b-custom_op-eager", Outcome.TIMEOUT, Stage.RUN),
    ]
    row = next(line for line in support_chart(Results(fingerprint=FINGERPRINT, cells=cells)).splitlines() if line.startswith("| [eager]"))
    assert [part.strip() for part in row.split("|")[2:6]] == ["Yes (2/2)", "", "Partial (1/2)", "No (0/2)"]


def test_results_round_trip_and_bad_files_are_named(tmp_path):
    path = tmp_path / "results.json"
    save(Results(fingerprint=FINGERPRINT, cells=[_result("add-raw-eager", Outcome.FAIL, Stage.RUN)]), str(path))
    loaded = load(str(path))
    assert loaded.cells[0].outcome is Outcome.FAIL and loaded.cells[0].stage is Stage.RUN

    truncated = tmp_path / "truncated.json"
    truncated.write_text(path.read_text()[:50])
    with pytest.raises(ResultsError, match="truncated.json: not JSON"):
        load(str(truncated))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ResultsError, match="not a triton-compat-matrix results file"):
        load(str(other))
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**json.loads(path.read_text()), "version": 99}))
    with pytest.raises(ResultsError, match="schema version 99"):
        load(str(newer))
    with pytest.raises(ResultsError, match="cannot read"):
        load(str(tmp_path / "absent.json"))


def test_a_harness_error_is_recorded_by_its_kind_and_older_files_module_paths_read_as_that_kind(tmp_path):
    # Results record harness.<Class>, not the module that defines it, so a module's move changes no recorded
    # data; a version-2 file's module paths load as those kinds, and its cells compare unchanged with new ones.
    from harness.execution.failures import failure as _failure
    from harness.execution.failures import record as _record
    from harness.execution.paths.subsystems import OpcheckFailed
    from harness.reporting.diff import compare

    now = CellResult(Cell.parse("add-triton_op-opcheck"), Outcome.PASS)
    _record(now, _failure(Stage.RUN, OpcheckFailed("1 of 4 opcheck tests fail")))
    assert now.error_type == "harness.OpcheckFailed"
    _record(now, _failure(Stage.RUN, AssertionError("a builtin")))
    assert now.error_type == "AssertionError"
    _record(now, _failure(Stage.RUN, torch._dynamo.exc.UserError(torch._dynamo.exc.UserErrorType.DYNAMIC_CONTROL_FLOW, "x")))
    assert now.error_type == "torch._dynamo.exc.UserError"

    old = tmp_path / "v2.json"
    save(Results(fingerprint=FINGERPRINT, cells=[_result("add-custom_op-aoti_cpp_strict", Outcome.FAIL, Stage.AOT_LOAD)]), str(old))
    data = json.loads(old.read_text())
    data["version"], data["cells"][0]["error_type"] = 2, "harness.cpp_runtime.RuntimeFailure"
    old.write_text(json.dumps(data))
    [cell] = load(str(old)).cells
    assert cell.error_type == "harness.RuntimeFailure"
    new = CellResult(Cell.parse("add-custom_op-aoti_cpp_strict"), Outcome.FAIL, stage=Stage.AOT_LOAD, error_type="harness.RuntimeFailure")
    assert compare(load(str(old)), Results(fingerprint=FINGERPRINT, cells=[new])).unchanged == 1
    assert json.loads(dumps(load(str(old))))["version"] == VERSION


def test_report_command_merges_split_runs_of_one_environment(tmp_path, capsys):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    save(Results(fingerprint=FINGERPRINT, cells=[_result("add-raw-eager")]), str(first))
    save(Results(fingerprint=FINGERPRINT, cells=[_result("add-raw-aoti_strict", Outcome.CRASH, Stage.AOT_LOAD)]), str(second))
    assert cli(["report", str(first), str(second), "--out", str(tmp_path / "out")]) == 0
    merged = load(str(tmp_path / "out" / "results.json"))
    assert {c.cell.id for c in merged.cells} == {"add-raw-eager", "add-raw-aoti_strict"}

    other = tmp_path / "c.json"
    save(Results(fingerprint=dataclasses.replace(FINGERPRINT, torch="2.12.0"), cells=[_result("add-raw-export_strict")]), str(other))
    with pytest.raises(ResultsError, match="different environment"):
        merge([(str(first), load(str(first))), (str(other), load(str(other)))])
    assert cli(["report", str(first), str(first), "--out", str(tmp_path / "out")]) == 2
    assert "already in an earlier file" in capsys.readouterr().err


def test_runs_on_cards_of_one_architecture_share_a_chart_and_each_rerun_names_its_card(tmp_path):
    def on(name, capability, cell):
        gpu = Gpu(available=True, name=name, count=1, driver="580", memory="1 MiB", capability=capability)
        path = tmp_path / f"{name}-{cell}.json"
        save(Results(fingerprint=dataclasses.replace(FINGERPRINT, gpu=gpu), cells=[_result(cell)]), str(path))
        return str(path), load(str(path))

    h200, h100 = on("NVIDIA H200", "9.0", "add-raw-eager"), on("NVIDIA H100 80GB HBM3", "9.0", "add-raw-eager")
    merged = merge([h200, h100], rerun=True)
    assert merged.fingerprint.gpu.name == "NVIDIA H200" and [r.gpu for r in merged.fingerprint.reruns] == ["NVIDIA H100 80GB HBM3"]
    with pytest.raises(ResultsError, match="different environment.*capability"):  # another architecture compiles other code
        merge([h200, on("NVIDIA A100", "8.0", "add-raw-eager")], rerun=True)


def test_a_rerun_folded_over_a_full_run_replaces_its_cells_and_the_chart_says_which_run_each_came_from(tmp_path):
    full, rerun = tmp_path / "full.json", tmp_path / "rerun.json"
    save(Results(fingerprint=FINGERPRINT, cells=[_result("add-raw-eager"), _result("add-raw_autograd-export_strict", Outcome.FAIL, Stage.EXPORT)],
                 wall_time_s=100.0), str(full))
    later = dataclasses.replace(FINGERPRINT, git=GitCommit(commit="abc1234"), command="pytest --matrix -k raw_autograd", time="T2")
    save(Results(fingerprint=later, cells=[_result("add-raw_autograd-export_strict")], wall_time_s=5.0), str(rerun))
    assert cli(["report", str(full), str(rerun), "--rerun", "--out", str(tmp_path / "out")]) == 0
    merged = load(str(tmp_path / "out" / "results.json"))
    outcomes = {c.cell.id: c.outcome for c in merged.cells}
    assert outcomes == {"add-raw-eager": Outcome.PASS, "add-raw_autograd-export_strict": Outcome.PASS}
    assert merged.complete and merged.wall_time_s == 100.0
    [record] = merged.fingerprint.reruns
    assert (record.file, record.commit, record.cells) == (str(rerun), "abc1234", ["add-raw_autograd-export_strict"])
    assert "1 cells re-run on commit abc1234, T2 (`pytest --matrix -k raw_autograd`)" in (tmp_path / "out" / "SUPPORT.md").read_text()
    # the folded chart renders alone again, keeping its record of the re-run
    assert cli(["report", str(tmp_path / "out" / "results.json"), "--out", str(tmp_path / "again")]) == 0
    assert load(str(tmp_path / "again" / "results.json")).fingerprint.reruns == [record]


def test_tutorial_chart_marks_where_measurements_disagree():
    from harness.reporting.support import tutorial_chart

    cells = [
        _result("a-custom_op-compile_fullgraph"), _result("b-custom_op-compile_fullgraph"),
        _result("a-raw-aoti_fresh_nonstrict"), _result("b-raw-aoti_fresh_nonstrict", Outcome.FAIL, Stage.EXPORT),
        _result("a-custom_op-aoti_fresh_nonstrict", Outcome.FAIL, Stage.AOT_LOAD), _result("a-custom_op-aoti_nonstrict"),
        _result("a-triton_op-aoti_fresh_nonstrict"), _result("a-triton_op-aoti_nonstrict"),
    ]
    for cell in cells[:2]:
        cell.kernel_in_graph = InGraph.OPAQUE
    table, disagreements = tutorial_chart(Results(fingerprint=FINGERPRINT, cells=cells))
    traces = next(line for line in table.splitlines() if line.startswith("| Does torch.compile trace into"))
    assert "No (0/2); tutorial: No" in traces  # custom_op is opaque, as published
    aoti = next(line for line in table.splitlines() if line.startswith("| Supports AOTInductor, package run in a fresh"))
    assert "**Partial (1/2); tutorial says Yes** ⚠" in aoti  # raw: one package runs in a fresh process, one does not export
    # custom_op's package fails in a fresh process: the tutorial's No is right for deployment, and the entry
    # says it runs where it was built
    assert "No (0/1); 1 more run only in the process that built them; tutorial: No" in aoti
    assert "Yes (1/1); tutorial: Yes" in aoti  # triton_op
    # in the process that built it, custom_op's package runs: the in-process entry still disagrees
    assert len(disagreements) == 2
    assert any("`b-raw-aoti_fresh_nonstrict`" in d for d in disagreements)
    assert any("`a-custom_op-aoti_nonstrict`" in d for d in disagreements)


def test_warnings_pytorch_logs_during_a_cell_are_kept_even_from_non_propagating_loggers():
    import logging

    from harness.execution.execute import _captured_warnings
    from harness.model.judging import outcome_label

    result = _result("add-raw-compile_fullgraph")
    dynamo = logging.getLogger("torch._dynamo")
    with _captured_warnings(result):
        dynamo.warning("Encountered an exception in identify_mutated_tensors, assuming every input is mutated")
        logging.getLogger("torch._inductor.foo").info("not a warning")
    assert result.warnings == ["Encountered an exception in identify_mutated_tensors, assuming every input is mutated"]
    assert outcome_label(result) == "pass, assumes every input mutated"


def test_scalar_inputs_are_drawn_where_the_artifact_is_made_per_call_and_fixed_where_it_is_traced():
    from hypothesis import HealthCheck, given, settings

    from harness.authoring.case import Example
    from harness.execution.drawing import examples

    case = registry.load().cases["scaled_add"]
    drawn = case.inputs(Example(torch.float32, (5,), 0, (("alpha", -1.5), ("repeat", 3))), "cpu")
    assert drawn[2:] == (-1.5, 3) and drawn[0].shape == (5,)
    assert case.inputs(Example(torch.float32, (5,), 0), "cpu")[2:] == (0.5, 1)  # example_scalars
    seen = {"compile": set(), "export": set()}

    # What is drawn is checked, not how fast: on a loaded machine the first draw can pass hypothesis's time check.
    @settings(max_examples=60, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(compiled=examples(case, Row.COMPILE_DEFAULT), exported=examples(case, Row.EXPORT_STRICT))
    def draw(compiled, exported):
        seen["compile"].add(dict(compiled.scalars)["repeat"])
        seen["export"].add(exported.scalars)

    draw()
    assert seen["compile"] == {1, 2, 3}  # including 1, the value Triton specialises
    assert seen["export"] == {()}  # traced once, with example_scalars
    assert "repeat=3" in str(Example(torch.float32, (5,), 0, (("repeat", 3),)))


def test_the_docs_case_table_is_the_generated_one():
    from harness.authoring import catalog

    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "cases.md")).read()
    copy = doc.split("<!-- cases: python -m harness cases -->\n")[1].split("\n<!-- end cases -->")[0]
    cases = registry.load().cases
    assert copy == catalog.table(cases.values()), "docs/cases.md's case table is stale: paste `python -m harness cases` into it"
    row = next(line for line in copy.splitlines() if line.startswith("| `scaled_add`"))
    assert "(1..4096)" in row and "`repeat`: sampled_from([1, 2, 3])" in row and "traced with alpha=0.5, repeat=1" in row
    assert "(0..64, 0..300)" in next(line for line in copy.splitlines() if line.startswith("| `maybe_empty`"))


def test_cell_timeouts_per_row_and_a_clear_error_for_an_unknown_row():
    from harness.model.errors import UsageError
    from harness.model.rows import parse_timeouts, timeout_for

    chosen = parse_timeouts(["120", "aoti=1800", "aoti_nonstrict=2400"])
    assert timeout_for(Row.AOTI_NONSTRICT, chosen) == 2400  # the row beats its kind
    assert timeout_for(Row.AOTI_STRICT, chosen) == 1800  # the kind beats every cell's
    assert timeout_for(Row.EAGER, chosen) == 120
    assert timeout_for(Row.AOTI_STRICT, {}) == Row.AOTI_STRICT.spec.timeout_s == 900
    with pytest.raises(UsageError, match="unknown row 'aoti_fast'; give a row \\(eager, "):
        parse_timeouts(["aoti_fast=10"])
    with pytest.raises(UsageError, match="'ten' is not a number of seconds"):
        parse_timeouts(["eager=ten"])


def test_a_long_command_is_shortened_in_the_markdown_and_kept_whole_in_results(tmp_path):
    from harness.model.results import load
    from harness.reporting import report

    results = load(os.path.join(os.path.dirname(__file__), "data", "results-v1.json"))
    results.fingerprint.command = "pytest " + " ".join(f"--deselect=harness/plugin/matrix.py::test_cell[c{n}]" for n in range(500))
    report.write(results, str(tmp_path))
    support = (tmp_path / "SUPPORT.md").read_text()
    assert f"({len(results.fingerprint.command)} characters in all, in results.json)" in support
    assert "[c499]" not in support and "[c499]" in (tmp_path / "results.json").read_text()


def test_an_interrupt_while_the_reports_are_written_waits_until_they_are_done():
    import signal

    from harness.plugin.interrupts import signals_deferred

    before = signal.getsignal(signal.SIGINT)
    with signals_deferred() as received:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        written = True  # reached: neither signal interrupted the block
    assert written and received == ["SIGINT", "SIGTERM"]
    assert signal.getsignal(signal.SIGINT) is before


def test_every_row_holds_every_fact_and_its_kind_has_a_builder():
    from harness.execution import builders
    from harness.model.rows import Examples, Kind, RowSpec

    titles = [p.spec.title for p in Row]
    assert len(set(titles)) == len(titles)
    for row in Row:
        assert row.value == row.spec.name == row.name.lower()
        assert row.spec.kind in builders.BUILDERS, f"{row.value}: no builder for kind {row.spec.kind}"
    assert set(builders.BUILDERS) == set(Kind)
    with pytest.raises(TypeError, match="row 'compile_fast' lacks torch.compile options"):
        RowSpec("compile_fast", Kind.COMPILE, "torch.compile, fast", timeout_s=60, cost=1, timed=True, examples=Examples.DRAWN)
    with pytest.raises(TypeError, match="row 'aoti_x' lacks a cost above 0, export strictness"):
        RowSpec("aoti_x", Kind.AOTI, "AOTInductor x", timeout_s=60, cost=0, timed=True, examples=Examples.BATCH)


def test_a_cell_names_its_control_its_speed_baseline_and_its_test():
    cell = Cell.parse("add-triton_op-aoti_cpp_strict")
    assert cell.control() == Cell("add", Wrapping.CONTROL, Row.AOTI_CPP_STRICT)
    assert cell.speed_baseline() == Cell("add", Wrapping.RAW, Row.EAGER)
    assert Cell.parse("add-custom_op-train_compile_default").speed_baseline() == Cell("add", Wrapping.RAW_AUTOGRAD, Row.TRAIN_EAGER)
    assert cell.package_key("float16") == Cell.parse("add-triton_op-aoti_strict").package_key("float16") == "add-triton_op-float16"
    assert Cell.parse("add-triton_op-export_strict").package_key("float16") is None
    # The matrix's node id: its module under pytest's rootdir, or the test alone where the package lies outside it.
    assert Cell.of_test("harness/plugin/matrix.py::test_cell[add_autotuned-raw-eager]") == Cell("add_autotuned", Wrapping.RAW, Row.EAGER)
    assert Cell.of_test(".venv/lib/python3.12/site-packages/harness/plugin/matrix.py::test_cell[add-raw-eager]") == Cell("add", Wrapping.RAW, Row.EAGER)
    assert Cell.of_test("::test_cell[add-raw-eager]") == Cell("add", Wrapping.RAW, Row.EAGER)
    assert Cell.of_test("tests/harness/test_units.py::test_cell_ids_round_trip") is None
    assert Cell.of_test("tests/my_matrix.py::test_cell[add-raw-eager]") is None
    assert Cell.of_test("tests/matrix.py::test_cell[not a cell]") is None  # a test of the same name elsewhere


def test_reports_diffs_and_repeat_comparisons_leave_the_results_they_are_given_unchanged(tmp_path):
    from harness.reporting import diff, report, support
    from harness.tools import repeat

    results = Results(fingerprint=FINGERPRINT, cells=[
        _result("add-control-aoti_strict", Outcome.CRASH, Stage.AOT_LOAD),
        _result("add-triton_op-aoti_strict", Outcome.CRASH, Stage.AOT_LOAD),
        _result("add-raw-eager"),
    ])
    other = Results(fingerprint=FINGERPRINT, cells=[_result("add-control-aoti_strict"), _result("add-triton_op-aoti_strict"),
                                                    _result("add-raw-eager", Outcome.WRONG, Stage.RUN)])
    before = [json.dumps(r.to_json(), sort_keys=True) for r in (results, other)]
    report.write(results, str(tmp_path))
    support.support_chart(results), report.matrix(results), support.tutorial_chart(results)
    found = diff.compare(results, other)
    compared = repeat.compare([("a", results), ("b", other)])
    repeat.combined(compared)
    assert [json.dumps(r.to_json(), sort_keys=True) for r in (results, other)] == before
    assert load(str(tmp_path / "results.json")).by_cell()[Cell.parse("add-triton_op-aoti_strict")].blamed_on == "add-control-aoti_strict"
    assert [a.cell.id for a, _ in found.regressed] == ["add-raw-eager"]


def test_the_results_tools_run_where_torch_cannot_be_imported(tmp_path):
    """`report` and `diff` read and write results files only: a CI job that merges or diffs them needs no torch, nor does
    the pytest plugin's import."""
    import subprocess
    import sys

    from harness.reporting import support

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    gpu, cpu = (os.path.join(root, "reports", m, "results.json") for m in ("gpu", "cpu"))
    # matplotlib too: the picture is an extra, which the committed chart shows where this render says how to get it.
    blocked = "import sys, runpy; [sys.modules.__setitem__(m, None) for m in ('torch', 'triton', 'hypothesis', 'numpy', 'matplotlib')]; "
    for args, status in ((["diff", gpu, cpu, "--out", str(tmp_path / "diff.md")], 1), (["report", gpu, "--out", str(tmp_path)], 0)):
        code = blocked + f"sys.argv = ['harness', *{args!r}]; runpy.run_module('harness', run_name='__main__')"
        done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
        assert done.returncode == status, done.stderr
    # pytest loads the plugin there too (its entry point): it must import, its runner side's torch left for the runners.
    plugin = subprocess.run([sys.executable, "-c", blocked + "import harness.plugin"], cwd=root, capture_output=True, text=True)
    assert plugin.returncode == 0, plugin.stderr
    assert "regressed" in (tmp_path / "diff.md").read_text()
    committed = open(os.path.join(root, "reports", "gpu", "SUPPORT.md")).read()
    shown, how_to = ("\n".join(support.picture_lines(drawn)) for drawn in (True, False))
    assert committed.count(shown) == 1, "reports/gpu/SUPPORT.md does not show the picture: re-render it with matplotlib"
    assert (tmp_path / "SUPPORT.md").read_text() == committed.replace(shown, how_to)


def test_one_program_exported_strict_and_non_strict_has_one_digest_and_another_program_another():
    from harness.execution.builders import program_digest

    class Scaled(torch.nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.register_buffer("scale", torch.full((4,), scale))

        def forward(self, x):
            return torch.sin(x) * self.scale

    x = (torch.randn(4),)
    strict = program_digest(torch.export.export(Scaled(2.0), x, strict=True))
    assert strict == program_digest(torch.export.export(Scaled(2.0), x, strict=False))
    assert strict != program_digest(torch.export.export(Scaled(3.0), x))  # another constant
    assert strict != program_digest(torch.export.export(Scaled(2.0), (torch.randn(4, dtype=torch.float64),)))  # another dtype
    assert strict != program_digest(torch.export.export(Scaled(2.0), (torch.randn(3, 4),)))  # another shape
    batch = ({0: torch.export.Dim("batch", min=1, max=64)},)  # each export numbers its size symbols anew
    dynamic = [program_digest(torch.export.export(Scaled(2.0), (torch.randn(3, 4),), dynamic_shapes=batch, strict=s)) for s in (True, False)]
    assert dynamic[0] == dynamic[1] != strict


def test_the_rows_call_each_style_through_a_plain_function_as_users_do():
    # What export, compile and the other rows are handed: a function of the case's named inputs that calls the
    # Function's apply or the operator through torch.ops, never the bound apply or the operator object itself.
    import importlib
    import inspect

    from harness.execution import wrapping
    from harness.model.columns import OP_NAMESPACE, OPERATOR_STYLES, Wrapping

    case = importlib.import_module("cases.scaled_add").CASE
    expected = {
        Wrapping.RAW_AUTOGRAD: "return scaled_add_function.apply(x, y, alpha, repeat)",
        **{style: f"return torch.ops.{OP_NAMESPACE}.scaled_add_{style.value}(x, y, alpha, repeat)" for style in OPERATOR_STYLES},
    }
    for style, call in expected.items():
        fn = wrapping.build(case, style)
        assert inspect.isfunction(fn) and list(inspect.signature(fn).parameters) == ["x", "y", "alpha", "repeat"], style
        assert inspect.getsource(fn).splitlines()[1].strip() == call, inspect.getsource(fn)
    # opcheck is given the registered operator itself, which the style's function calls
    assert wrapping.operator(case, Wrapping.CUSTOM_OP)._qualname == f"{OP_NAMESPACE}::scaled_add_custom_op"


def test_an_error_dynamo_raises_unwrapped_while_tracing_a_call_is_a_compile_failure_and_one_from_running_code_is_not(monkeypatch):
    # Dynamo lets some internal errors through as they are (an AssertionError from its interpreter, as
    # "ListVariable(length=3) is already tracked for mutation" on torch 2.11): the compiled call never ran.
    import torch._dynamo.symbolic_convert as interpreter

    from harness.execution.failures import failure as _failure
    from harness.model.outcome import Stage

    def step(self):
        raise AssertionError("planted: Dynamo's interpreter asserts while tracing")

    torch._dynamo.reset()
    with monkeypatch.context() as patched:
        patched.setattr(interpreter.InstructionTranslatorBase, "step", step)
        with pytest.raises(AssertionError) as traced:
            torch.compile(lambda x: x + 1, fullgraph=True)(torch.ones(3))
    torch._dynamo.reset()
    assert _failure(Stage.RUN, traced.value, called=True).stage is Stage.COMPILE

    def run(x):
        raise AssertionError("planted: the compiled code's own assertion")

    with pytest.raises(AssertionError) as ran:
        run(torch.ones(3))
    assert _failure(Stage.COMPILE, ran.value, called=True).stage is Stage.RUN


def test_a_triton_kernel_is_identified_by_its_code_and_settings_not_its_address():
    from harness.authoring import registry
    from harness.execution.builders import _kernel_identity

    cases = registry.load().cases
    add, autotuned = cases["add"].kernels[0], cases["add_autotuned"].kernels[0]
    assert _kernel_identity(add) == _kernel_identity(add)
    assert _kernel_identity(add) != _kernel_identity(autotuned)
    assert not any("0x" in part for part in _kernel_identity(autotuned))  # no addresses: processes agree


def _copy_kernel(x_ptr, y_ptr, n):  # a kernel's Python source, for a JITFunction made on the CPU (nothing compiles it)
    pass


def test_a_kernel_launched_in_this_process_is_identified_as_one_that_was_not():
    from triton.runtime.jit import JITFunction

    from harness.execution.builders import _kernel_identity

    kernel = JITFunction(_copy_kernel)  # as @triton.jit makes it on a GPU, where a launch first computes its hash
    before = _kernel_identity(kernel)
    assert kernel.cache_key and kernel.hash  # what a launch fills in
    assert _kernel_identity(kernel) == before  # one program, one digest, in a process that launched it or not


def test_a_result_as_close_to_float64_as_the_eager_reference_passes_and_a_mistake_does_not():
    from tests.harness.planted import sum_in_order

    x = torch.randn(40, 64, generator=torch.Generator().manual_seed(0)).half()
    eager, fp32_accumulated, exact = sum_in_order(x), x.float().sum(1).half(), x.double().sum(1)
    case = _case(dtypes=(torch.float16,))
    with pytest.raises(Mismatch):  # beyond float16's tolerance of the eager reference
        assert_close(case, torch.float16, [eager], [fp32_accumulated], ["out"])
    assert_close(case, torch.float16, [eager], [fp32_accumulated], ["out"], lambda: [exact])
    with pytest.raises(Mismatch, match="RMSE against a float64 reference"):
        assert_close(case, torch.float16, [eager], [fp32_accumulated + 0.25], ["out"], lambda: [exact])
    with pytest.raises(Mismatch, match="2 of 4 elements"):  # integers exactly, however close
        assert_close(case, torch.float16, [torch.tensor([1, 2, 3, 4])], [torch.tensor([1, 3, 3, 5])], ["out"], lambda: None)


def test_findings_name_the_case_on_the_smaller_side_of_each_row_and_style():
    def cell(name, outcome, **kw):
        return CellResult(Cell.parse(name), outcome, **kw)

    results = Results(fingerprint=Fingerprint(), cells=[
        cell("a-raw-eager", Outcome.PASS), cell("b-raw-eager", Outcome.PASS),
        cell("c-raw-eager", Outcome.WRONG, max_error=2.0),
        cell("a-raw-compile_default", Outcome.PASS),
        cell("b-raw-compile_default", Outcome.FAIL, stage=Stage.COMPILE), cell("c-raw-compile_default", Outcome.FAIL, stage=Stage.COMPILE),
        cell("a-raw-export_strict", Outcome.PASS), cell("b-raw-export_strict", Outcome.SKIPPED),  # a skip is no disagreement
        cell("a-triton_op-eager", Outcome.PASS), cell("b-triton_op-eager", Outcome.PASS),
    ])
    chart = support_chart(results)
    findings = chart.split("## Findings: where the cases disagree")[1].split("\n## ")[0]
    lines = [line for line in findings.splitlines() if line.startswith("- ")]
    assert lines == [
        "- `a` passes where most cases fail, in 1 cell: [torch.compile (graph breaks allowed)](MATRIX.md#compile_default): raw @triton.jit",
        "- `c` fails where most cases pass, in 1 cell: [eager](MATRIX.md#eager): raw @triton.jit (WRONG (max err 2))",
    ]


def test_the_dtype_probe_runs_once_a_run_and_later_runner_processes_read_its_answer(tmp_path, monkeypatch):
    from harness.environment import probe

    calls = []
    monkeypatch.setattr(probe, "_probe", lambda device: calls.append(device) or {"bfloat16": "planted: not exact here"})
    record = str(tmp_path / "caches")
    assert probe.broken_dtypes("cpu", record) == {"bfloat16": "planted: not exact here"}
    assert probe.broken_dtypes("cpu", record) == {"bfloat16": "planted: not exact here"}
    assert calls == ["cpu"]  # the second process's answer came from the record
    monkeypatch.setattr(probe.torch, "__version__", "9.9.9")  # a reused cache dir after an upgrade: probed again
    probe.broken_dtypes("cpu", record)
    assert calls == ["cpu", "cpu"]
    assert probe.broken_dtypes("cpu") is not None and calls == ["cpu", "cpu", "cpu"]  # no record dir: always probed


GENERATED_WITH_A_DOUBLE = '''
@triton_heuristics.user_autotune(
    configs=[],
    inductor_meta={'kernel_name': 'scale_kernel_0'},
    triton_meta={'signature': {'x_ptr': '*fp32', 'out_ptr': '*fp32', 'alpha': 'fp64', 'n': 'i32'}, 'device': DeviceProperties(type='cuda'), 'constants': {}},
    filename=__file__,
    custom_kernel=True,
)
@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    pass
'''


def test_a_float_scalar_the_generated_code_types_fp64_is_read_off_its_signature_and_only_for_the_cases_kernels():
    from harness.execution.degradation import Watch

    watch = Watch(("scale_kernel",), output_code=[GENERATED_WITH_A_DOUBLE])
    assert watch.degradations() == ["scale_kernel: float scalar alpha compiled as fp64 (eager Triton passes a Python float as fp32)"]
    assert Watch(("another_kernel",), output_code=[GENERATED_WITH_A_DOUBLE]).degradations() == []
    assert Watch(("scale_kernel",), output_code=[GENERATED_WITH_A_DOUBLE.replace("'fp64'", "'fp32'")]).degradations() == []


def test_mutation_analysis_is_compared_only_on_the_tensors_the_eager_launch_passed():
    from harness.execution.degradation import Watch

    watch = Watch(("k",), marked_mutated={"k": {"in_ptr", "out_ptr", "out_desc"}}, written={"k": {"out_ptr", "x_ptr"}},
                  tensor_arguments={"k": {"in_ptr", "out_ptr", "x_ptr"}})
    assert watch.degradations() == [
        "k: mutation analysis marks in_ptr as written, which the kernel does not write (an extra clone, no fusion)",
        "k: mutation analysis misses x_ptr, which the kernel writes (a correctness risk)",
    ]  # out_desc, a TMA descriptor, is not claimed either way


def test_cuda_graph_skips_are_counted_with_their_reason_once_without_the_stack_trace():
    from torch._inductor import cudagraph_utils

    from harness.execution.degradation import watching

    with watching(()) as watch:
        for _ in range(3):
            # Inductor's own call: it logs on the logger of this torch (cudagraphs_log, or perf_hint_log before 2.9).
            cudagraph_utils.log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to mutated inputs (1 instances). Found from : \n  File x.py")
    assert watch.degradations() == ["CUDA graphs skipped (3x): mutated inputs (1 instances)"]


def test_a_kernel_edit_adds_one_statement_on_the_first_body_line_and_moves_no_other_line(tmp_path, monkeypatch):
    import importlib
    import sys

    from harness.execution.kernel_edit import edited_sources, marker

    source = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef twice_kernel(x_ptr, n, BLOCK: tl.constexpr):\n"
        '    """Doubles."""\n    offsets = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) * 2)\n'
    )
    (tmp_path / "tcm_edit_probe.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("tcm_edit_probe")
    try:
        edited = edited_sources((module.twice_kernel,))[str(tmp_path / "tcm_edit_probe.py")]
    finally:
        sys.modules.pop("tcm_edit_probe", None)
    assert edited["module"] == "tcm_edit_probe"
    lines, before = edited["text"].splitlines(), source.splitlines()
    assert len(lines) == len(before)
    assert lines[7] == f"    {marker('twice_kernel')} = 2; offsets = tl.arange(0, BLOCK)"
    assert [line for n, line in enumerate(lines) if n != 7] == [line for n, line in enumerate(before) if n != 7]
    compile(edited["text"], "edited", "exec")  # still Python


def test_the_run_time_estimates_are_the_committed_runs_measurements():
    from harness.model.results import load as load_results
    from harness.plugin import estimate

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    measured = {("gpu", "matrix"): "reports/gpu/results.json", ("interpreter", "quick"): "reports/cpu/results.json",
                ("interpreter", "matrix"): "reports/evidence/cpu/full-profile-sample/results.json"}
    for key, path in measured.items():
        assert estimate.MEASURED[key] == estimate.row_seconds(load_results(os.path.join(root, path))), (
            f"harness/plugin/estimate.py's {key} is stale: paste estimate.row_seconds(load({path!r})) into MEASURED")


def test_the_first_lines_of_a_run_say_what_it_will_do_and_how_long_the_full_profile_takes():
    from harness.authoring import registry
    from harness.model.cell import all_cells
    from harness.plugin import estimate

    cases = registry.load().cases
    plan = estimate.Plan(cells=all_cells(list(cases)), all_cells=len(all_cells(list(cases))), cases=cases, specs=["harness.cases"],
                         profile="quick", gpu=None, workers=2, report_dir="reports")
    text = estimate.announce(plan)
    assert text.startswith(f"{len(plan.cells)} cells: {len(cases)} cases from harness.cases x 5 wrapping styles x {len(Row)} rows, "
                           "on the CPU through Triton's interpreter")
    quick, full = estimate.expected_seconds(plan), estimate.expected_seconds(plan, "matrix")
    assert 60 < quick < 600 < full  # a first run in minutes; the full profile on the interpreter far longer
    assert f"expect about {quick / 60:.0f} min" in text and f"takes about {full / 60:.0f} min here" in text
    assert estimate.expected_seconds(dataclasses.replace(plan, gpu="H200"), "thorough") is None  # never measured: no guess


def test_the_warm_cache_rows_new_process_serves_every_dtype_of_a_cell_each_compile_its_first(tmp_path, monkeypatch):
    """One new process a cell, not one a dtype: the second dtype's request reaches the same process, which
    compiles it afresh (its own cache lookups counted), and the answers are the reference's."""
    from harness.authoring.case import Example
    from harness.execution.warm_cache import EditedInNewProcess
    from harness.processes.helper_process import CellProcesses

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    case, processes, pids = registry.load().cases["add"], CellProcesses(), []
    for dtype in (torch.float32, torch.float16):
        artifact = EditedInNewProcess(case, "control", {"fullgraph": True}, str(tmp_path), processes)
        inputs = case.inputs(Example(dtype, case.example_shape, seed=0), "cpu")
        torch.testing.assert_close(artifact(*inputs), case.reference(*inputs))
        assert artifact.report["stale"] == [] and artifact.report["hits"]["fxgraph_cache_miss"] == 1, artifact.report
        pids.append(processes.warm_cache.proc.pid)
    assert pids[0] == pids[1]
    processes.warm_cache.close()
    assert not processes.warm_cache.alive()


def test_each_cell_starts_from_the_runners_environment_without_what_torch_or_an_earlier_cell_set(monkeypatch):
    from torch._inductor.runtime import compile_tasks

    from harness.execution.baseline import EnvironmentBaseline

    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.setenv("TCM_TEST_RUN_SET", "kept")
    started = dict(os.environ)
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/torch/bin/ptxas")  # as Inductor's first Triton compile sets it, after the start
    environment = EnvironmentBaseline(started)
    compile_tasks._set_triton_ptxas_path()  # cached: a process runs it once
    monkeypatch.setenv("TCM_TEST_SET_BY_A_CASE", "1")
    monkeypatch.setenv("TCM_TEST_RUN_SET", "changed by a case")

    assert environment.restore() == ["TCM_TEST_RUN_SET", "TCM_TEST_SET_BY_A_CASE", "TRITON_PTXAS_PATH"]
    assert os.environ["TCM_TEST_RUN_SET"] == "kept"
    assert "TCM_TEST_SET_BY_A_CASE" not in os.environ and "TRITON_PTXAS_PATH" not in os.environ
    assert compile_tasks._set_triton_ptxas_path.cache_info().currsize == 0  # the next compile sets it again, as a new process's first


def test_a_ptxas_path_the_run_itself_set_is_kept(monkeypatch):
    from harness.execution.baseline import EnvironmentBaseline

    monkeypatch.setenv("TRITON_PTXAS_PATH", "/my/ptxas")
    environment = EnvironmentBaseline(dict(os.environ))
    assert environment.restore() == [] and os.environ["TRITON_PTXAS_PATH"] == "/my/ptxas"


def test_a_fork_request_is_the_command_a_new_python_would_run_and_reads_back_as_it_was_sent():
    from harness.processes.zygote import ForkRequest

    where = dict(env={"A": "1"}, cwd="/w", stderr="/w/log", status="/w/exit1.status", set_while_running=("CUDA_HOME",))
    module = ForkRequest.of_command([sys.executable, "-m", "harness.execution.runner_main", "cases.add"], **where)
    assert (module.module, module.args, module.safe_path, module.what()) == ("harness.execution.runner_main", ("cases.add",), False, "harness.execution.runner_main")
    code = ForkRequest.of_command([sys.executable, "-P", "-c", "print(1)", "x"], **where)
    assert (code.code, code.args, code.safe_path, code.what()) == ("print(1)", ("x",), True, "-c")
    script = ForkRequest.of_command([sys.executable, "serve.py", "--port", "0"], **where)
    assert (script.script, script.args, script.what()) == ("serve.py", ("--port", "0"), "serve.py")
    for request in (module, code, script):
        assert ForkRequest.parse(request.message()) == request
    # Not this interpreter running Python: started with subprocess instead.
    assert ForkRequest.of_command(["/usr/bin/g++", "-c", "x.cpp"], **where) is None
    assert ForkRequest.of_command([sys.executable, "-X", "importtime"], **where) is None


def test_a_warm_cache_request_reads_back_as_it_was_sent():
    import dataclasses
    import pickle

    from harness.execution.warm_cache import Edit, EditRequest

    edit = Edit("add", "harness.cases.add", "raw", {"/x/add.py": {"module": "m", "text": "t", "kernels": [["k", 3]], "whole_file": True}})
    loading = EditRequest(edit, {"fullgraph": True})
    compiling = EditRequest(edit, {}, inputs="/w/2.in.pt", outputs="/w/2.out.pt", device="cuda")
    for request in (loading, compiling):  # as harness.processes.case_process sends it: a dict, pickled
        assert EditRequest.of(pickle.loads(pickle.dumps(dataclasses.asdict(request)))) == request
    assert Edit.of(dataclasses.asdict(edit)).key() == edit.key() and loading.inputs is None


def test_the_runner_s_messages_read_back_as_they_were_sent():
    cell = Cell.parse("add-raw-eager")
    request = CellRequest(cell, Settings(profile=PROFILES["quick"], workdir="/tmp/w", caches="/tmp/c"))
    assert CellRequest.parse(request.line()) == request and not request.last
    last = CellRequest(cell, request.settings, last=True)
    assert CellRequest.parse(last.line()) == last
    result = CellResult(cell, Outcome.WRONG, stage=Stage.RUN, message="differs from the reference", ran=["float32 shape=(1,) seed=0"])
    sent = [Event(EventKind.READY, device="cuda", broken_dtypes={"bfloat16": "wrong on this device"}),
            Event(EventKind.STAGE, stage=Stage.COMPILE), Event(EventKind.RESULT, result=result, ran_case_code=True),
            Event(EventKind.HEALTHY), Event(EventKind.UNHEALTHY)]
    for event in sent:
        back = Event.parse(event.line())
        assert (back.kind, back.device, back.broken_dtypes, back.stage, back.ran_case_code) == (
            event.kind, event.device, event.broken_dtypes, event.stage, event.ran_case_code)
        assert (back.result and back.result.to_json()) == (event.result and event.result.to_json())
    with pytest.raises(ValueError):  # a kind the protocol does not have
        Event.parse(json.dumps({"event": "finished"}))


def test_shapes_take_a_smallest_size_for_each_dimension_and_the_case_table_says_each_range():
    from hypothesis import find

    from harness.authoring import catalog

    strategy = inputs.shapes(64, 1024, 32, min_size=(1, 2, 2))  # heads and sequence need two
    assert catalog.strategy_text(strategy) == "(1..64, 2..1024, 2..32)"
    assert find(strategy, lambda shape: True) == (1, 2, 2)  # the smallest shape hypothesis can draw
    with pytest.raises(ValueError, match="min_size \\(1, 2\\) needs one size from 0 to each maximum, for each of the 3"):
        inputs.shapes(64, 1024, 32, min_size=(1, 2))
    # a hand-made strategy reads as its ranges, not hypothesis's repr
    made = st.tuples(st.integers(2, 64), st.sampled_from([128, 256]))
    assert catalog.strategy_text(made) == "(2..64, sampled_from([128, 256]))"


def test_an_input_declared_no_grad_takes_no_gradient_in_training_and_one_not_declared_is_checked(tmp_path):
    """A buffer (a rotary embedding's cos) declared no_grad stays as it is in the training rows, and its gradient is
    neither asked of the styles nor computed for the reference; undeclared, the reference's gradient for it is checked."""
    from tests.harness.test_trustworthy_reports import _matrix

    module = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_modules", "buffer_inputs.py")
    proc = _matrix(tmp_path, f"--cases={module}", "-k", "train_eager", f"--report-dir={tmp_path / 'r'}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cells = {c.cell.id: c for c in load(str(tmp_path / "r" / "results.json")).cells}
    for style in ("control", "raw_autograd", "triton_op", "custom_op"):
        assert cells[f"scaled_by_buffer-{style}-train_eager"].outcome is Outcome.PASS, cells[f"scaled_by_buffer-{style}-train_eager"].message
    assert cells["scaled_by_buffer-raw-train_eager"].message.startswith("gradient of input 'x' differs")  # raw loses x's only
    undeclared = cells["scaled_by_buffer_undeclared-custom_op-train_eager"]
    assert undeclared.outcome is Outcome.WRONG and undeclared.message.startswith("gradient of input 'cos' differs from the reference: "
                                                                                 "it is missing (None)"), undeclared.message
    with pytest.raises(CaseError, match="no_grad names \\['bias'\\], which are not tensor inputs of the launcher"):
        check(_case(no_grad=frozenset({"bias"})))


def test_a_view_with_gaps_between_its_rows_is_sent_to_another_process_with_its_own_strides(tmp_path):
    """`.cpu()` and `.to(device)` make such a view contiguous on a GPU; the package server, the C++ runner and the
    warm-cache process were given that other layout, and a package compiled for the view's strides read it wrongly."""
    from harness.execution.transfer import with_its_strides

    view = torch.arange(40.0).reshape(5, 8)[1:, 2:6]  # a storage offset, and a row stride wider than a row
    sent = with_its_strides(view)
    assert (sent.shape, sent.stride(), sent.untyped_storage().data_ptr() != view.untyped_storage().data_ptr()) == (view.shape, (8, 1), True)
    torch.save([sent], tmp_path / "in.pt")
    [received] = torch.load(tmp_path / "in.pt")
    assert received.stride() == (8, 1) and torch.equal(received, view)
    assert with_its_strides(view.t()).stride() == view.t().stride()  # any layout, transposed included


def test_a_ctrl_c_that_lands_in_a_garbage_collectors_callback_still_stops_the_run():
    """Raised in the collector's callback (hypothesis installs one), KeyboardInterrupt was printed as ignored and lost:
    the controller went on as if never interrupted."""
    import gc
    import signal
    import time

    from harness.plugin.interrupts import OnceInterrupted

    def callback(phase, info):
        if phase == "start":
            os.kill(os.getpid(), signal.SIGINT)  # handled at the callback's next instruction, inside it
            sum(range(1000))

    handler = OnceInterrupted(raises=True)
    previous = signal.signal(signal.SIGINT, handler)
    gc.callbacks.append(callback)
    try:
        with pytest.raises(KeyboardInterrupt):
            gc.collect()
            gc.callbacks.remove(callback)
            time.sleep(5)  # the interrupt arrives again once the collection is over
    finally:
        signal.signal(signal.SIGINT, previous)
        if callback in gc.callbacks:
            gc.callbacks.remove(callback)
    assert handler.count == 1


def test_a_stopped_worker_says_so_only_once_its_cell_in_flight_has_ended_and_starts_no_cell_after():
    """The controller writes the reports once each worker has said it is stopped: a worker idle says so at once, one in a
    cell once what the cell waited on has ended, and one interrupted before its next cell does not begin it."""
    import signal

    from harness.plugin.interrupts import OnceInterrupted

    said: list[str] = []
    idle = OnceInterrupted(raises=False, acknowledge=lambda: said.append("idle"))
    idle(signal.SIGINT, None)
    assert said == ["idle"]
    with pytest.raises(KeyboardInterrupt):
        with idle.deferred(lambda: said.append("ended")):
            said.append("began")  # not reached: the worker was interrupted before its next cell
    assert said == ["idle"] and idle.count == 1

    said.clear()
    busy = OnceInterrupted(raises=False, acknowledge=lambda: said.append("acknowledged"))
    with pytest.raises(KeyboardInterrupt):
        with busy.deferred(lambda: said.append("runner killed")):
            busy(signal.SIGINT, None)
            said.append("runner returned")
            busy(signal.SIGINT, None)  # a second interrupt while it stops: counted, nothing more
    assert said == ["runner killed", "runner returned", "acknowledged"] and busy.count == 2


def test_one_passing_cell_in_ten_is_sampled_by_its_id_spread_over_every_row_style_and_case():
    from harness.authoring.registry import load as load_cases
    from harness.model.cell import matrix_cells
    from harness.plugin.confirmation import SAMPLE_ONE_IN, sampled

    cells = matrix_cells(load_cases(["harness.cases"]).cases)
    chosen = [c for c in cells if sampled(c)]
    assert abs(len(chosen) / len(cells) - 1 / SAMPLE_ONE_IN) < 0.015, (len(chosen), len(cells))
    assert {c.row for c in chosen} == {c.row for c in cells}
    assert {c.wrapping for c in chosen} == {c.wrapping for c in cells}
    assert {c.case for c in chosen} == {c.case for c in cells}
    assert chosen == [c for c in cells if sampled(c)]  # the same cells on every run


def test_a_confirmed_cell_keeps_its_shared_result_where_alone_agrees_and_is_charted_as_alone_where_it_differs(tmp_path):
    from harness.model.outcome import Confirmed
    from harness.plugin.confirmation import settled, why_confirmed

    cell = Cell("add", Wrapping.RAW, Row.EAGER)
    wrong = CellResult(cell, Outcome.WRONG, stage=Stage.RUN, message="output 0 differs", worker="gw0", timings=Timings(work=1.5, wall=2.0))
    failed = CellResult(cell, Outcome.FAIL, stage=Stage.COMPILE, error_type="RuntimeError", message="at an address 0x1")
    failed_again = CellResult(cell, Outcome.FAIL, stage=Stage.COMPILE, error_type="RuntimeError", message="at an address 0x2")
    passed = CellResult(cell, Outcome.PASS)
    assert why_confirmed("sample", wrong) is Confirmed.NOT_PASSED and why_confirmed("none", wrong) is None
    assert why_confirmed("failing", passed) is None and why_confirmed("all", passed) is Confirmed.SAMPLED
    assert why_confirmed("all", CellResult(cell, Outcome.SKIPPED)) is None
    # The sample leaves out a passing cell that took long: run again alone right after itself, it would set the run's end.
    from harness.plugin.confirmation import SAMPLE_LONGEST_S, sampled

    in_sample = next(c for c in (Cell(f"add{n}", Wrapping.RAW, Row.EAGER) for n in range(100)) if sampled(c))
    quick = CellResult(in_sample, Outcome.PASS, timings=Timings(wall=SAMPLE_LONGEST_S))
    assert why_confirmed("sample", quick) is Confirmed.SAMPLED
    assert why_confirmed("sample", dataclasses.replace(quick, timings=Timings(wall=SAMPLE_LONGEST_S + 1))) is None
    assert why_confirmed("all", dataclasses.replace(quick, timings=Timings(wall=SAMPLE_LONGEST_S + 1))) is Confirmed.SAMPLED

    same = settled(failed, failed_again, Confirmed.NOT_PASSED)  # the same stage and exception: messages may differ
    assert same.confirmation.agreed is True and same.message == "at an address 0x1"
    passed.timings = Timings(setup=0.25, compile=2.0, run=1.0, work=3.75, wall=7.0, process_start=3.0)
    differs = settled(wrong, passed, Confirmed.NOT_PASSED)
    assert differs.outcome is Outcome.PASS and differs.confirmation.agreed is False
    assert differs.confirmation.shared.outcome is Outcome.WRONG and differs.confirmation.alone.outcome is Outcome.PASS
    # Where its run alone went: the figures sum it for the benchmark, by why the cells ran alone and by part.
    assert differs.confirmation.seconds == 7.0
    assert differs.confirmation.spent == {"process_start": 3.0, "plain_eager": 0.5, "setup": 0.25, "compile": 2.0, "run": 1.0,
                                          "harness": 0.25}
    from harness.reporting.figures import figures, render

    summed = figures(Results(fingerprint=Fingerprint(workers=1), cells=[differs]), wall_s=10.0)
    assert summed.confirmation_why_s == {"did not pass": 7.0} and summed.confirmation_spent_s == differs.confirmation.spent
    assert ("7.0 s did not pass; 3.0 s waiting for a runner process, 0.5 s checking in plain eager, 0.2 s in setup, 2.0 s compiling, "
            "1.0 s running examples, 0.2 s the harness's own") in render(summed, Fingerprint(), "bench")

    path = tmp_path / "results.json"
    save(Results(fingerprint=Fingerprint(confirm="sample"), cells=[differs, CellResult(Cell("add", Wrapping.CONTROL, Row.EAGER), Outcome.PASS)]), str(path))
    read = load(str(path))
    assert read.by_cell()[cell].confirmation == differs.confirmation
    assert "confirmation" not in json.loads(path.read_text())["cells"][0]  # the control, unconfirmed: nothing written
    chart = support_chart(read)
    assert "2 cells" not in chart and "1 cells (1 did not pass); **0 agreed, 1 differed**" in chart
    assert "case `add` depends on what ran before it in its process" in chart


def test_the_interpreters_default_confirms_one_cell_in_ten_whatever_its_outcome():
    from harness.plugin.confirmation import sampled, why_confirmed

    cells = [Cell(f"case{n}", Wrapping.RAW, Row.EAGER) for n in range(200)]
    for outcome in (Outcome.PASS, Outcome.FAIL):
        chosen = [c for c in cells if why_confirmed("tenth", CellResult(c, outcome, stage=Stage.RUN)) is not None]
        assert chosen == [c for c in cells if sampled(c)] and 0 < len(chosen) < 40

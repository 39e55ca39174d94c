"""Which cells run here: each rule a predicate over the cell, its case and an explicit run environment, so that a
machine's limits are said as "not tested here" with the probe's answer, and nothing else is left out."""

import dataclasses

from harness.authoring import catalog, registry
from harness.execution.applicability import Probes, RunEnvironment, select
from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.rows import Row
from harness.model.settings import PROFILES

CASES = registry.load([registry.BUILTIN]).cases


class Answers(Probes):
    """Probes with set answers, counting what was asked."""

    def __init__(self, autotuning=None, launch=None, wrap_triton=None):
        super().__init__(None)
        self.answers = {"autotuning": autotuning, "launch": launch, "wrap_triton": wrap_triton}
        self.asked: list[str] = []

    def autotuning(self, device):
        self.asked.append("autotuning")
        return self.answers["autotuning"]

    def interpreted_launch_under_compile(self, options):
        self.asked.append("launch")
        return self.answers["launch"]

    def wrap_triton_takes_interpreted(self):
        self.asked.append("wrap_triton")
        return self.answers["wrap_triton"]

    def interpreted_extern(self, module, name, arity):
        self.asked.append("extern")
        return None


def _env(device="cpu", interpreted=True, probes=None, broken=None, profile="matrix"):
    return RunEnvironment(device=device, interpreted=interpreted, profile=PROFILES[profile], broken_dtypes=broken or {},
                          probes=probes or Answers())


def test_on_the_interpreter_a_raw_launch_under_compile_with_graph_breaks_is_not_tested_here_with_the_probes_answer():
    probes = Answers(launch="InternalTorchDynamoError: interpreted launch")
    chosen = select(Cell("add", Wrapping.RAW, Row.COMPILE_DEFAULT), CASES["add"], _env(probes=probes))
    assert chosen.skipped.startswith("Triton's interpreter runs this kernel") and "interpreted launch" in chosen.skipped
    # fullgraph stops at the launch, so the cell runs; and a GPU never asks the interpreter's probe
    assert select(Cell("add", Wrapping.RAW, Row.COMPILE_FULLGRAPH), CASES["add"], _env(probes=probes)).skipped is None
    gpu = Answers(launch="never asked")
    assert select(Cell("add", Wrapping.RAW, Row.COMPILE_DEFAULT), CASES["add"], _env("cuda", False, gpu)).skipped is None
    assert "launch" not in gpu.asked


def test_where_autotuning_cannot_run_the_control_still_runs_and_the_styles_are_not_tested_here():
    probes = Answers(autotuning="no driver")
    case = CASES["add_autotuned"]
    assert select(Cell("add_autotuned", Wrapping.CONTROL, Row.EAGER), case, _env(probes=probes)).skipped is None
    raw = select(Cell("add_autotuned", Wrapping.RAW, Row.EAGER), case, _env(probes=probes)).skipped
    assert raw.startswith("not tested here: Triton's autotuner cannot run on this device") and "no driver" in raw
    # the CPU fallback of a generated operator runs the reference registered as its CPU kernel: it runs
    assert select(Cell("add_autotuned", Wrapping.CUSTOM_OP, Row.CPU_FALLBACK), case, _env(probes=probes)).skipped is None


def test_the_first_rule_that_gives_a_reason_decides_and_no_probe_runs_for_a_cell_left_out_before_it():
    probes = Answers(autotuning="no driver")
    chosen = select(Cell("add_autotuned", Wrapping.SHIPPED, Row.EAGER), CASES["add_autotuned"], _env(probes=probes))
    assert chosen.skipped.startswith("the case names no shipped op") and probes.asked == []


def test_dtypes_this_machine_gets_wrong_and_those_past_the_profiles_count_are_left_out_each_with_its_reason():
    case = CASES["add"]
    names = [str(d).removeprefix("torch.") for d in case.dtypes]
    chosen = select(Cell("add", Wrapping.RAW, Row.EAGER), case, _env(broken={names[0]: "wrong sums"}, profile="quick"))
    assert chosen.dtypes_skipped[names[0]] == "wrong sums"
    assert chosen.case.dtypes and names[0] not in [str(d).removeprefix("torch.") for d in chosen.case.dtypes]
    every = select(Cell("add", Wrapping.RAW, Row.EAGER), case, _env(broken={n: "wrong" for n in names}))
    assert every.skipped.startswith("no dtype of this case can be tested here") and every.case.dtypes == ()


def test_a_case_that_declares_no_backward_has_no_training_cell_in_any_generated_column_raw_included_and_the_control_still_trains():
    case = CASES["two_outputs"]
    assert case.backward is None and not case.mutates
    for row in (Row.TRAIN_EAGER, Row.TRAIN_COMPILE_DEFAULT):
        for wrapping in (Wrapping.RAW, Wrapping.RAW_AUTOGRAD, Wrapping.TRITON_OP, Wrapping.CUSTOM_OP):
            assert select(Cell("two_outputs", wrapping, row), case, _env()).skipped == "the case declares no backward", (wrapping, row)
        assert select(Cell("two_outputs", Wrapping.CONTROL, row), case, _env()).skipped is None
    # with a backward declared, the raw launcher is trained as it is: the gradient it loses is the finding
    assert select(Cell("add", Wrapping.RAW, Row.TRAIN_EAGER), CASES["add"], _env()).skipped is None


def test_a_case_whose_float_inputs_all_take_no_gradient_has_no_training_cell_not_even_the_control_or_the_shipped_op():
    # An int8 matmul whose float scales are quantization's (no_grad): a training step would only run the forward.
    base = CASES["add"]
    names = [p.name for p in base.input_parameters()]
    frozen = dataclasses.replace(base, no_grad=frozenset(names), shipped=base.reference)
    assert not frozen.takes_gradient and base.takes_gradient
    for row in (Row.TRAIN_EAGER, Row.TRAIN_COMPILE_FULLGRAPH, Row.TRAIN_COMPILE_DEFAULT):
        for wrapping in (Wrapping.CONTROL, Wrapping.SHIPPED):
            assert select(Cell("add", wrapping, row), frozen, _env()).skipped.startswith("no input of the case takes a gradient"), (wrapping, row)
    assert "no input takes a gradient: no training cells" in catalog.table([frozen])  # as `harness cases` says it
    # one float input left to differentiate is enough for the training rows to run
    one_left = dataclasses.replace(base, no_grad=frozenset(names[1:]))
    assert one_left.takes_gradient and select(Cell("add", Wrapping.CONTROL, Row.TRAIN_EAGER), one_left, _env()).skipped is None


def test_a_case_that_requires_other_hardware_still_runs_its_control_so_its_reference_is_checked_here():
    case = CASES["tma_add"]
    assert case.requires("cpu") is not None
    assert select(Cell("tma_add", Wrapping.CONTROL, Row.EXPORT_STRICT), case, _env()).skipped is None
    for wrapping in (Wrapping.RAW, Wrapping.TRITON_OP, Wrapping.CUSTOM_OP):
        assert select(Cell("tma_add", wrapping, Row.EXPORT_STRICT), case, _env()).skipped == case.requires("cpu")

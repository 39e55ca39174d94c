"""Planted kernels through the isolated runner: each fault is recorded with the right outcome, stage
and message, and the next cell still runs."""

import contextlib
import json
import math
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import torch

from harness.authoring import registry
from harness.environment import machine, probe
from harness.model.outcome import Fault, InGraph, Outcome, Stage
from harness.processes import runner_template
from harness.processes.helper_process import ZYGOTE_ENV, RunnerTemplate, _Forked, start_zygote, stop_zygote
from harness.processes.runner import INDUCTOR_CACHE, RUNNER_MODULE, Runner, runner_env
from tests.harness.conftest import PLANTED, runner_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PLANTED_BLAME = os.path.join(os.path.dirname(__file__), "planted_blame.py")
PLANTED_HIDDEN = os.path.join(os.path.dirname(__file__), "planted_hidden.py")


def test_wrong_result_is_wrong_with_error_and_smallest_example(run_planted):
    result = run_planted("planted_wrong")
    assert result.outcome is Outcome.WRONG
    assert result.stage is Stage.RUN
    assert math.isclose(result.max_error, 1.0, rel_tol=1e-6)
    assert result.example == "float32 shape=(1,) seed=0"  # hypothesis shrank it to the smallest input
    # what its reproducer replays: the inputs checked, not the one the path was built with, which it never checked
    assert len(result.ran) == result.examples_run and result.example in result.ran
    assert "differs from the reference" in result.message


def test_every_cell_times_an_autotuned_kernel_again_as_a_new_process_would(run_planted):
    # The planted autotuner adds into the caller's output each time it times a config: each size's first call
    # comes out wrong. The same cell twice in one runner process: the second must not find the configs chosen.
    first, again = run_planted("planted_autotune_adds_up"), run_planted("planted_autotune_adds_up")
    for result in (first, again):
        assert result.outcome is Outcome.WRONG and result.stage is Stage.RUN
        assert "differs from the reference" in result.message
    assert again.example == first.example


def test_a_cell_finds_torch_s_triton_kernel_table_empty_as_a_new_process_does_on_a_torch_whose_reset_keeps_it(monkeypatch):
    # torch 2.11's torch._dynamo.reset() leaves the table of the Triton kernels Dynamo traced; aot_compile saves the
    # whole table with what it compiled, so an earlier cell's entry that pickle refuses (a WeakValueDictionary, as a
    # fake tensor holds one) failed every later precompiled save of the process. Here reset keeps it, as 2.11's does.
    import pickle
    import weakref

    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    from harness.execution.execute import as_a_new_process

    reset = torch._dynamo.reset

    def reset_keeping_the_table():
        kept = (dict(kernel_side_table.id_to_kernel), dict(kernel_side_table.kernel_to_id), dict(kernel_side_table.constant_args))
        reset()
        kernel_side_table.id_to_kernel, kernel_side_table.kernel_to_id, kernel_side_table.constant_args = kept

    monkeypatch.setattr(torch._dynamo, "reset", reset_keeping_the_table)
    kernel_side_table.add_constant_args({"left_by_an_earlier_cell": weakref.WeakValueDictionary()})
    with pytest.raises(Exception, match="WeakValueDictionary"):
        pickle.dumps(dict(kernel_side_table.constant_args))
    as_a_new_process(registry.load([registry.BUILTIN + ".add"]).cases["add"])
    assert (kernel_side_table.id_to_kernel, kernel_side_table.kernel_to_id, kernel_side_table.constant_args) == ({}, {}, {})


def test_a_kernel_autotuned_by_triton_s_own_benchmarker_is_not_tested_where_the_autotuner_cannot_run(run_planted):
    # Triton's CPU interpreter has no driver to time configs on: a limit of the machine, said as such, not a
    # failure counted against a style. The control runs no kernel and still measures the row; on a GPU the cell runs.
    result = run_planted("planted_default_autotuner", wrapping="triton_op")
    if torch.cuda.is_available():
        assert result.outcome is Outcome.PASS, result.message
        return
    assert result.outcome is Outcome.SKIPPED
    assert result.message.startswith("not tested here: Triton's autotuner cannot run on this device (probed once a run")
    assert run_planted("planted_default_autotuner", wrapping="control").outcome is Outcome.PASS


def test_unwritten_output_cannot_pass(run_planted):
    result = run_planted("planted_unwritten")
    assert result.outcome is Outcome.WRONG
    assert result.max_error == math.inf
    assert "NaN where the reference has a number" in result.mismatched


def test_raise_while_traced_fails_at_compile_with_the_users_message(run_planted):
    assert run_planted("planted_raises_at_trace", row="eager").outcome is Outcome.PASS
    result = run_planted("planted_raises_at_trace", row="compile_fullgraph")
    assert result.outcome is Outcome.FAIL
    assert result.stage is Stage.COMPILE
    assert result.error_type == "torch._dynamo.exc.Unsupported"
    assert "planted: this launcher refuses to be traced" in result.message


def test_segfault_is_a_crash_and_the_next_cell_runs(run_planted):
    result = run_planted("planted_segfault")
    assert result.outcome is Outcome.CRASH
    assert result.signal == "SIGSEGV"
    assert result.stage is Stage.RUN
    assert "Segmentation fault" in result.message
    assert any("Fatal Python error" in line for line in result.log_tail)
    after = run_planted("planted_ok")
    assert after.outcome is Outcome.PASS
    assert after.timings.process_start > 0  # a new runner process took over


@pytest.mark.skipif(not torch.cuda.is_available(), reason="an illegal address poisons a CUDA context; the interpreter has none")
def test_poisoned_cuda_context_costs_one_cell(run_planted):
    result = run_planted("planted_illegal_address")
    assert result.outcome in (Outcome.FAIL, Outcome.CRASH)
    assert result.stage is Stage.RUN
    assert "illegal" in (result.message or "") + " ".join(result.log_tail)
    after = run_planted("planted_ok")
    assert after.outcome is Outcome.PASS
    assert after.timings.process_start > 0  # the poisoned runner was replaced


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA kernel fault reported asynchronously")
def test_a_kernel_fault_is_reported_before_a_python_error_raised_after_the_launch(run_planted):
    result = run_planted("planted_faults_then_raises")
    assert result.outcome in (Outcome.FAIL, Outcome.CRASH) and result.stage is Stage.RUN
    assert "illegal memory access" in (result.message or ""), result.message
    assert run_planted("planted_ok").outcome is Outcome.PASS


def test_one_process_per_cell_when_asked(run_planted):
    workdir = tempfile.mkdtemp(prefix="tcm-test-")
    try:
        with Runner([PLANTED], workdir, env=runner_env(workdir), cells_per_process=1) as fresh:
            first = run_planted("planted_ok", runner=fresh)
            standby = fresh._spare is not None
            second = run_planted("planted_ok", runner=fresh)
            logs = fresh.logs()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert first.outcome is second.outcome is Outcome.PASS
    assert first.timings.process_start > 0 and second.timings.process_start > 0
    # Each cell's process starts while the cell before it runs: the first's standby, then one more for each cell.
    assert standby and len(logs) == 3


def test_the_cases_own_code_raising_is_the_cases_error_not_the_harness(run_planted):
    from harness.model.judging import outcome_label

    refused = run_planted("planted_inputs_fail_on_large_shapes")
    assert (refused.outcome, refused.stage, refused.fault) == (Outcome.ERROR, Stage.SETUP, "case")
    assert refused.message.startswith("planted: make_inputs refuses shape")
    raising = run_planted("planted_reference_raises", wrapping="control")
    assert (raising.outcome, raising.stage, raising.fault) == (Outcome.ERROR, Stage.REFERENCE, "case")
    assert (raising.error_type, raising.message) == ("ArithmeticError", "planted: the reference raises")
    assert outcome_label(raising) == "case error @reference"


def test_another_summation_order_is_not_a_wrong_answer_but_a_mistake_still_is(run_planted):
    order = run_planted("planted_sums_in_fp32")  # float32 accumulation vs a float16 reference rounding every step
    assert order.outcome is Outcome.PASS, order.message
    mistake = run_planted("planted_sums_half_the_row")
    assert mistake.outcome is Outcome.WRONG
    assert "RMSE against a float64 reference" in mistake.message


def test_unknown_case_is_a_harness_error(run_planted):
    result = run_planted("no_such_case")
    assert result.outcome is Outcome.ERROR
    assert "no case named 'no_such_case'" in result.message
    assert result.fault is Fault.HARNESS


def test_a_wrong_backward_is_a_wrong_gradient_in_every_style_that_uses_it(run_planted):
    for style in ("raw_autograd", "triton_op", "custom_op"):
        result = run_planted("planted_wrong_backward", wrapping=style, row="train_eager")
        assert result.outcome is Outcome.WRONG, style
        assert result.message.startswith("gradient of input 'x' differs from the reference"), style
        assert math.isclose(result.max_error, 1.0, rel_tol=1e-6), style
    assert run_planted("planted_ok", wrapping="triton_op", row="train_eager").outcome is Outcome.PASS


def test_a_raw_kernel_without_autograd_loses_gradients_and_is_reported_wrong(run_planted):
    result = run_planted("planted_ok", wrapping="raw", row="train_eager")
    assert result.outcome is Outcome.WRONG
    assert "missing (None)" in result.message and "cut off from the autograd graph" in result.message
    assert run_planted("planted_ok", wrapping="raw_autograd", row="train_eager").outcome is Outcome.PASS


def test_a_wrong_flop_formula_is_caught_against_the_references_own_count(run_planted):
    result = run_planted("planted_wrong_flops", wrapping="triton_op", row="flop_counter")
    assert result.outcome is Outcome.WRONG
    assert "the flop count differs from the reference" in result.message
    assert "256 where the reference has 512" in result.message  # M=1: 1*16*16 declared, 2*1*16*16 true
    raw = run_planted("planted_wrong_flops", wrapping="raw", row="flop_counter")
    assert raw.outcome is Outcome.WRONG and "0 where the reference has" in raw.message
    assert run_planted("planted_wrong_flops", wrapping="control", row="flop_counter").outcome is Outcome.SKIPPED


def test_traced_or_opaque_is_read_off_the_compiled_graph(run_planted):
    assert run_planted("planted_ok", wrapping="custom_op", row="compile_fullgraph").kernel_in_graph is InGraph.OPAQUE
    assert run_planted("planted_ok", wrapping="control", row="compile_fullgraph").kernel_in_graph is InGraph.ABSENT
    if torch.cuda.is_available():  # the interpreter's kernels cannot be traced at all
        assert run_planted("planted_ok", wrapping="triton_op", row="compile_fullgraph").kernel_in_graph is InGraph.TRACED
        assert run_planted("planted_ok", wrapping="raw", row="compile_fullgraph").kernel_in_graph is InGraph.TRACED


def test_subsystem_rows_say_how_a_raw_kernel_fails_them(run_planted):
    subclass = run_planted("planted_ok", wrapping="raw", row="tensor_subclass")
    assert subclass.outcome is Outcome.FAIL and subclass.stage is Stage.RUN
    assert run_planted("planted_ok", wrapping="custom_op", row="tensor_subclass").outcome is Outcome.PASS
    # Several outputs: each must come back a TwoTensor, and each half is checked.
    assert run_planted("planted_two_outputs", wrapping="custom_op", row="tensor_subclass").outcome is Outcome.PASS
    assert run_planted("planted_ok", wrapping="custom_op", row="opcheck").outcome is Outcome.PASS
    assert run_planted("planted_ok", wrapping="raw", row="opcheck").outcome is Outcome.SKIPPED


def test_a_profile_that_checks_fewer_dtypes_says_which_it_left_out(run_planted):
    every = run_planted("planted_two_outputs")
    assert every.outcome is Outcome.PASS and every.dtypes == ["float16", "float32"] and every.dtypes_skipped == {}
    first = run_planted("planted_two_outputs", dtypes_per_cell=1)  # as the `quick` profile runs
    assert first.outcome is Outcome.PASS and first.dtypes == ["float32"]
    assert first.dtypes_skipped == {"float16": "this run's profile checks 1 dtype(s) a cell"}


def _wait_for_standby(runner, timeout=120):
    """Until the waiting process (prepared or standby) has announced it is ready (its first line sits unread in its pipe)."""
    runner._prepared()  # prepare() starts it from a thread
    proc, _ = runner._spare
    ready, _, _ = select.select([proc.stdout.fileno()], [], [], timeout)
    assert ready, "the standby runner did not start"


@pytest.mark.parametrize("standby", [True, False])
def test_a_standby_runner_waits_once_a_runner_was_replaced_and_takes_over_after_the_next_crash(run_planted, standby):
    workdir = tempfile.mkdtemp(prefix="tcm-test-")
    try:
        with Runner([PLANTED], workdir, env=runner_env(workdir), standby=standby) as runner:
            assert run_planted("planted_ok", runner=runner).outcome is Outcome.PASS
            assert runner._spare is None  # the first runner has no standby: most runs never replace one
            assert run_planted("planted_segfault", runner=runner).outcome is Outcome.CRASH
            replaced = run_planted("planted_ok", runner=runner)
            if standby:
                _wait_for_standby(runner)
            assert run_planted("planted_segfault", runner=runner).outcome is Outcome.CRASH
            after = run_planted("planted_ok", runner=runner)
            logs = runner.logs()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert replaced.outcome is Outcome.PASS and after.outcome is Outcome.PASS
    assert replaced.timings.process_start > 1.0  # the first replacement imports torch
    if standby:  # it was already running: taking over costs a handshake, not an import of torch
        assert 0 < after.timings.process_start < 1.0
        assert len(logs) == 4  # the first, its replacement, the standby that took over, and the next standby
    else:
        assert after.timings.process_start > 1.0
        assert len(logs) == 3


def test_a_prepared_runner_starts_before_the_first_cell(run_planted):
    workdir = tempfile.mkdtemp(prefix="tcm-test-")
    try:
        with Runner([PLANTED], workdir, env=runner_env(workdir)) as runner:
            runner.prepare()
            _wait_for_standby(runner)  # what pytest's collection and scheduling overlap
            first = run_planted("planted_ok", runner=runner)
            logs = runner.logs()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert first.outcome is Outcome.PASS
    assert 0 < first.timings.process_start < 1.0
    assert len(logs) == 1  # the prepared process, and no standby beside it


def test_a_runner_forked_from_the_runs_zygote_fails_as_a_started_one_and_is_replaced_by_another_fork(run_planted, run_zygote):
    workdir = tempfile.mkdtemp(prefix="tcm-test-")
    try:
        with Runner([PLANTED], workdir, env=runner_env(workdir), zygote=run_zygote, standby=False) as runner:
            first = run_planted("planted_ok", runner=runner)
            assert isinstance(runner._proc, _Forked)
            crashed = run_planted("planted_segfault", runner=runner)
            timed_out = run_planted("planted_hang", timeout=5, runner=runner)  # its runner is killed with whatever it started
            replaced = run_planted("planted_ok", runner=runner)
            logs = [open(log).read() for log in runner.logs()]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert first.outcome is replaced.outcome is Outcome.PASS
    assert (crashed.outcome, crashed.signal, crashed.stage) == (Outcome.CRASH, "SIGSEGV", Stage.RUN)
    assert "Segmentation fault" in crashed.message and any("Fatal Python error" in line for line in crashed.log_tail)
    assert (timed_out.outcome, timed_out.stage) == (Outcome.TIMEOUT, Stage.RUN)
    assert replaced.timings.process_start > 0  # a new runner process took over
    assert len(logs) == 3 and all("runner ready (forked by the zygote" in log for log in logs)  # the first and two replacements


def test_a_runner_whose_environment_the_zygote_was_not_imported_with_is_started_with_subprocess(run_planted, run_zygote):
    # libgomp reads OMP_NUM_THREADS when torch's import loads it: a child of the zygote would keep the zygote's.
    workdir = tempfile.mkdtemp(prefix="tcm-test-")
    try:
        with Runner([PLANTED], workdir, env={**runner_env(workdir), "OMP_NUM_THREADS": "3"}, zygote=run_zygote) as runner:
            result = run_planted("planted_ok", runner=runner)
            assert isinstance(runner._proc, subprocess.Popen)
            log = open(runner.logs()[0]).read()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert result.outcome is Outcome.PASS
    assert "runner ready: " in log  # not forked


_ZYGOTE_GIVEN = """
import json, os, sys
from harness.processes.helper_process import python_output, start_zygote, stop_zygote
from harness.processes.runner import runner_env

folder, extra = sys.argv[1], json.loads(sys.argv[2])
env = {**os.environ, **runner_env(folder), **extra}
proc, lifeline = start_zygote(os.path.join(folder, "zygote.log"), os.path.join(folder, "zygote.sock"), env)
served = python_output([sys.executable, "-c", "import torch, os; print(os.environ['TCM_FORKED_BY'])"], env,
                       zygote_at=os.path.join(folder, "zygote.sock"))
print(json.dumps({"zygote": type(proc).__name__, "pid": proc.pid, "served": served and [served[0], served[1].decode().strip()]}))
stop_zygote(proc, lifeline)
"""


def test_a_zygote_started_in_a_process_given_one_is_forked_from_it_only_where_their_environments_agree(run_zygote, tmp_path):
    """A test process's matrix runs fork their zygotes from its own (tests/harness/conftest.py): the new zygote serves
    as one started with subprocess does. One whose environment differs in anything torch's imports may read (CXX,
    which Inductor's config reads as it imports, though IMPORT_TIME_ENV does not name it) is started with subprocess."""
    def start(name, extra):
        folder = tmp_path / name
        folder.mkdir()
        done = subprocess.run([sys.executable, "-c", _ZYGOTE_GIVEN, str(folder), json.dumps(extra)], cwd=ROOT,
                              env={**os.environ, ZYGOTE_ENV: run_zygote}, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    same = start("same", {})
    assert same["zygote"] == "_Forked" and same["served"] == [0, str(same["pid"])], same  # it forked the child itself
    other = start("other", {"CXX": "/bin/false"})
    assert other["zygote"] == "Popen" and other["served"] == [0, str(other["pid"])], other


@contextlib.contextmanager
def _zygote_with_runner_template(folder, specs):
    """A run's zygote as the controller starts it: before this process's torch decides the device, with a runner template
    for `specs`; its socket, the template's and the log both write."""
    paths = [os.path.join(folder, name) for name in ("zygote.sock", "runners.sock", "zygote.log")]
    env = {**os.environ, **runner_env(folder, device=False)}
    proc, lifeline = start_zygote(paths[2], paths[0], env, runners=RunnerTemplate(paths[1], runner_template.__name__, registry.search_path(), specs))
    try:
        yield paths
    finally:
        stop_zygote(proc, lifeline)


def _runner_logs(runner):
    return [open(log).read() for log in runner.logs()]


def test_a_runs_runners_are_forked_from_its_runner_template_and_a_crashed_one_is_replaced_by_another_fork(run_planted, tmp_path):
    workdir = str(tmp_path / "work")
    with _zygote_with_runner_template(str(tmp_path), [PLANTED]) as (zygote, template, log):
        with Runner([PLANTED], workdir, env=runner_env(workdir), zygote=zygote, template=template, standby=False) as runner:
            first = run_planted("planted_ok", runner=runner)
            crashed = run_planted("planted_segfault", runner=runner)
            replaced = run_planted("planted_ok", runner=runner)
            logs = _runner_logs(runner)
        zygote_log = open(log).read()
    assert first.outcome is replaced.outcome is Outcome.PASS
    assert (crashed.outcome, crashed.signal) == (Outcome.CRASH, "SIGSEGV")
    assert len(logs) == 2 and all("runner ready (forked by the runner template" in text for text in logs), logs
    assert "runner template" in zygote_log and "refused" not in zygote_log, zygote_log  # the zygote decided the device as the runners' torch did


def test_a_runner_template_forks_runners_of_its_own_cases_only_and_the_zygote_forks_the_others(run_planted, tmp_path):
    workdir = str(tmp_path / "work")
    with _zygote_with_runner_template(str(tmp_path), [PLANTED_BLAME]) as (zygote, template, log):
        with Runner([PLANTED], workdir, env=runner_env(workdir), zygote=zygote, template=template) as runner:
            result = run_planted("planted_ok", runner=runner)
            logs = _runner_logs(runner)
        zygote_log = open(log).read()
    assert result.outcome is Outcome.PASS
    assert "runner ready (forked by the zygote" in logs[0]
    assert f": refused {RUNNER_MODULE}: it forks runners of {[PLANTED_BLAME]} only" in zygote_log, zygote_log
    assert "runner template" in zygote_log.split(f": refused {RUNNER_MODULE}")[0].splitlines()[-1]


def test_a_runner_template_whose_case_module_starts_a_thread_has_a_child_forked_before_that_import_serve_the_runners(run_planted, tmp_path):
    # A process forked while another thread runs may deadlock in the child (as one forked after a library's import
    # initialized CUDA): the template must not serve, but its child forked before the cases' import may.
    threaded = tmp_path / "starts_a_thread.py"
    threaded.write_text("import threading, time\n\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n")
    workdir, specs = str(tmp_path / "work"), [PLANTED, str(threaded)]
    with _zygote_with_runner_template(str(tmp_path), specs) as (zygote, template, log):
        with Runner(specs, workdir, env=runner_env(workdir), zygote=zygote, template=template) as runner:
            result = run_planted("planted_ok", runner=runner)
            logs = _runner_logs(runner)
        zygote_log = open(log).read()
    assert result.outcome is Outcome.PASS
    assert "runner ready (forked by the runner template" in logs[0], logs[0]
    assert "runner template: its cases' import left 2 threads run: a template forked before it serves the runners" in zygote_log, zygote_log
    assert "ready without the cases, which each runner imports" in zygote_log, zygote_log


def test_a_runs_dtype_probe_is_recorded_beside_its_runner_template_before_any_runner_asks(tmp_path, monkeypatch):
    # Otherwise the run's first runner measures it once forked, and the other first runners wait on its lock.
    record_dir = str(tmp_path / INDUCTOR_CACHE)
    record = os.path.join(record_dir, probe.RECORD)
    with _zygote_with_runner_template(str(tmp_path), [PLANTED]) as (_, _, log):
        deadline = time.monotonic() + 120
        while not os.path.exists(record):  # written whole, once measured: no runner was asked for
            assert time.monotonic() < deadline, f"no dtype probe recorded in {record}; the zygote's log:\n{open(log).read()}"
            time.sleep(0.2)

    def measured_again(device):
        raise AssertionError("the record holds no answer under the key a runner of this run looks up")

    monkeypatch.setattr(probe, "_probe", measured_again)  # a runner's own lookup (probe.broken_dtypes) must find it
    assert isinstance(probe.broken_dtypes(machine.cells_device(), record_dir), dict)


def test_runners_split_the_cpu_cores_between_pytest_workers(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert "OMP_NUM_THREADS" not in runner_env(str(tmp_path), workers=1)  # alone: torch's default
    env = runner_env(str(tmp_path), workers=2)
    threads = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                             env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    assert int(threads) == max(1, os.cpu_count() // 2)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's choice wins
    assert runner_env(str(tmp_path), workers=2)["OMP_NUM_THREADS"] == "3"


@pytest.mark.skipif(torch.cuda.is_available(), reason="Triton's interpreter runs kernels only without a GPU")
def test_on_the_interpreter_a_raw_launch_under_compile_is_left_out_with_the_probes_answer_and_fullgraph_still_runs(run_planted):
    left_out = run_planted("planted_ok", wrapping="raw", row="compile_default")
    assert left_out.outcome is Outcome.SKIPPED
    assert left_out.message.startswith("Triton's interpreter runs this kernel, and torch.compile() cannot run an interpreted launch here "
                                       "(probed once a run with a trivial kernel: "), left_out.message
    assert run_planted("planted_ok", wrapping="raw_autograd", row="compile_dynamic").message.startswith(
        "Triton's interpreter runs this kernel, and torch.compile(dynamic=True) cannot run")
    assert run_planted("planted_ok", wrapping="control", row="compile_default").outcome is Outcome.PASS
    traced = run_planted("planted_raises_at_trace", row="compile_fullgraph")  # Dynamo stops at the launch: the cell runs
    assert (traced.outcome, traced.stage) == (Outcome.FAIL, Stage.COMPILE)


def test_a_triton_op_body_names_its_kernels_so_torchs_discovery_finds_them():
    # torch hashes a triton_op's kernels into AOTAutograd's cache key only if it finds them in the op's source
    import importlib

    import torch._library.triton as discovery

    from harness.execution import wrapping
    from harness.model.columns import OP_NAMESPACE, Wrapping

    case = importlib.import_module("cases.add").CASE
    op = wrapping.operator(case, Wrapping.TRITON_OP)
    found = discovery.get_triton_kernels_for_op(f"{OP_NAMESPACE}::{op._name.split('::')[-1]}")
    if os.environ.get("TRITON_INTERPRET") == "1" and not found:
        pytest.skip("torch's discovery does not resolve the interpreter's kernels (InterpretedFunction)")
    assert case.kernels[0] in found


@pytest.mark.parametrize("style", ["raw", "raw_autograd", "triton_op", "custom_op"])
def test_strict_export_sees_each_style_called_as_users_call_it(run_planted, style):
    # A launcher strict export traces anywhere (PyTorch ops only), so only the calling shape can fail it. On torch
    # 2.11, a module holding the Function's bound `apply` (the calling shape this replaced) failed strict export
    # ("GetAttrVariable(AutogradFunctionVariable(), setup_context) has no type"); through a function calling
    # Fn.apply(x), as users call it, it passes.
    for row in ("export_strict", "train_eager"):
        result = run_planted("planted_traceable", wrapping=style, row=row)
        assert result.outcome is Outcome.PASS, (row, result.stage, result.message)


def test_an_output_inductor_cannot_fill_under_an_unbacked_size_is_allocated_as_written_and_the_cell_says_so(run_planted):
    # A full_like of a transposed layout with an unbacked batch fails Inductor's constant folding (it guards on the
    # unbacked size); the user's torch.empty_like compiles. The poison must not be what fails the cell.
    result = run_planted("planted_transposed_output", wrapping="raw", row="compile_unbacked")
    assert result.outcome is Outcome.PASS, (result.stage, result.message)
    assert any(u.startswith("unwritten elements of an output whose layout its sizes leave undecided") for u in result.unchecked), result.unchecked
    for row in ("eager", "export_strict"):  # poisoned as ever where the sizes decide the layout (a backed batch here)
        other = run_planted("planted_transposed_output", wrapping="raw", row=row)
        assert other.outcome is Outcome.PASS and other.unchecked == [], (row, other.message, other.unchecked)


needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="the interpreter's kernels cannot be compiled into a graph")


@needs_gpu
def test_a_float_scalar_compiled_as_fp64_is_a_degradation_of_a_passing_cell(run_planted):
    result = run_planted("planted_fp64_scalar", wrapping="raw", row="compile_fullgraph")
    assert result.outcome is Outcome.PASS
    assert any("scale_by_kernel: float scalar alpha compiled as fp64" in d for d in result.degradations), result.degradations
    assert run_planted("planted_fp64_scalar", wrapping="raw", row="eager").degradations == []


@needs_gpu
def test_a_tensor_the_analysis_marks_written_but_the_kernel_never_writes_is_a_degradation(run_planted):
    result = run_planted("planted_defeats_mutation_analysis", wrapping="triton_op", row="compile_fullgraph")
    assert result.outcome is Outcome.PASS
    assert any("mutation analysis marks in_ptr as written, which the kernel does not write" in d for d in result.degradations), \
        result.degradations
    clean = run_planted("planted_ok", wrapping="triton_op", row="compile_fullgraph")
    assert clean.outcome is Outcome.PASS and clean.degradations == []


@needs_gpu
def test_cuda_graphs_skipped_for_a_kernel_that_mutates_its_input_is_a_degradation_with_the_reason(run_planted):
    result = run_planted("planted_in_place", wrapping="raw", row="compile_cudagraphs")
    assert result.outcome is Outcome.PASS
    skipped = [d for d in result.degradations if d.startswith("CUDA graphs skipped")]
    assert skipped and "mutat" in skipped[0], result.degradations
    assert run_planted("planted_ok", wrapping="raw", row="compile_cudagraphs").degradations == []


@pytest.fixture(scope="module")
def hidden_runner(run_zygote):
    yield from runner_of(PLANTED_HIDDEN, run_zygote)


@needs_gpu
def test_a_warm_cache_that_serves_the_kernel_as_it_was_before_an_edit_is_wrong(run_planted, hidden_runner):
    hidden = run_planted("planted_hidden_from_discovery", wrapping="control", row="warm_cache_edit", runner=hidden_runner)
    assert hidden.outcome is Outcome.WRONG
    assert "stale kernel: the warm cache ran copy_kernel as it was before the edit" in hidden.message
    # the harness's triton_op names its kernel in its body: discovery sees it, and the edit reaches the new process
    for wrapping in ("triton_op", "raw"):
        assert run_planted("planted_hidden_from_discovery", wrapping=wrapping, row="warm_cache_edit", runner=hidden_runner).outcome is Outcome.PASS


def test_cuda_graph_rows_are_skipped_without_a_cuda_device_and_say_why(run_planted):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = run_planted("planted_ok", wrapping="control", row="compile_cudagraphs")
    assert result.outcome is Outcome.SKIPPED and "CUDA graphs need a CUDA device" in result.message


class _Planted(Exception):
    pass


def _planted_process(tmp_path):
    from harness.processes.case_process import CaseProcess

    env = {**os.environ, "PYTHONPATH": ROOT}
    return CaseProcess("tests.harness.planted_case_process", str(tmp_path), prefix="planted-", failure=_Planted, env=env)


def test_a_new_process_answers_each_request_whole_whatever_it_prints_and_says_how_it_died(tmp_path):
    process = _planted_process(tmp_path)
    try:
        for n in range(3):  # one process serves a cell's requests one after another
            assert process.ask({"n": n, "tensor file": str(tmp_path / f"{n}.pt")}, timeout_s=120) == {"echo": {"n": n, "tensor file": str(tmp_path / f"{n}.pt")}}
        with pytest.raises(_Planted, match=r"the new process died \(exit status 3\): planted: dying"):
            process.ask({"die": True}, timeout_s=120)
    finally:
        process.close()


def test_a_new_process_that_answers_nothing_in_its_time_is_killed_and_named(tmp_path):
    process = _planted_process(tmp_path)
    try:
        assert process.ask({"n": 0}, timeout_s=120) == {"echo": {"n": 0}}
        with pytest.raises(_Planted, match="the new process took over 2 s"):
            process.ask({"hang": True}, timeout_s=2)
        process.proc.wait(timeout=30)  # killed, not left running
        assert not process.alive()
    finally:
        process.close()

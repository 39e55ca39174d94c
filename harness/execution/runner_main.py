"""What a runner process runs: the cells its parent sends, each an Execution of its case.

Started as `python -m` of this module, or forked from the run's runner template that has its imports done
(harness.processes: the parent's side is harness.processes.runner.Runner, this process's own side RunnerChild).
"""

from __future__ import annotations

import os
import sys

from harness.environment import machine, vec_isa
from harness.execution import compile_ahead
from harness.model.messages import CellRequest, Event, EventKind
from harness.model.outcome import CellResult, Fault, Outcome, Stage
from harness.processes import profiling, runner_template
from harness.processes.helper_process import python_status
from harness.processes.runner_child import RunnerChild


def main(case_modules: list[str]) -> None:
    child = RunnerChild()  # first: the run's environment as it came
    cases = runner_template.prepare(case_modules)  # forked from the run's runner template: done there
    compile_ahead.keep_slice()  # a slice of an autotuned case's configs, compiled ahead of its cells: only in such a runner
    # Here and not at the top: the runner's parent side runs in the plugin, which needs no torch.
    from harness.environment.probe import broken_dtypes
    from harness.execution.baseline import ConfigBaseline, EnvironmentBaseline
    from harness.execution.execute import Execution

    child.phase("cases")
    device = machine.cells_device()
    records = machine.records_dir()
    if records:
        vec_isa.share(records, python=python_status)  # its checks forked from the zygote
    broken = broken_dtypes(device, records)
    child.phase("dtype probe")
    child.start_device(device)
    configs, environment = ConfigBaseline(), EnvironmentBaseline(child.started_env)  # what every cell starts from
    child.ready(device, broken)

    def run(request: CellRequest) -> tuple[CellResult, bool]:
        cell, settings = request.cell, request.settings
        case = cases.get(cell.case)
        if case is None:
            return CellResult(cell, Outcome.ERROR, stage=Stage.SETUP, fault=Fault.HARNESS,
                              message=f"no case named {cell.case!r} in {case_modules}"), False
        configs.restore()
        environment.restore()
        os.environ[profiling.CELL_ENV] = cell.id  # the processes the cell starts profile themselves under its name
        execution = Execution(cell, case, settings, device,
                              announce=lambda stage, plain_eager: child.send(Event(EventKind.STAGE, stage=stage, plain_eager=plain_eager)),
                              broken_dtypes=broken)
        with profiling.profiled("runner"):
            result = execution.run()
        return result, execution.ran_case_code

    child.serve(device, run)


if __name__ == "__main__":
    main(sys.argv[1:])

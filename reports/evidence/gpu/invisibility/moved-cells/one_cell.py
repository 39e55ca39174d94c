"""One cell run by the harness's own code in this fresh process (no zygote, no template, no earlier cell), with the
examples it draws printed: python one_cell.py CELL [CASE_SPEC]."""
import os, sys, tempfile
from harness.authoring import registry
from harness.environment import machine, probe
from harness.execution import autotune_timing, execute
from harness.execution.execute import Execution
from harness.model.cell import Cell
from harness.model.settings import Settings
import torch._dynamo.config as dc

autotune_timing.install()
dc.recompile_limit = 64
dc.fail_on_recompile_limit_hit = True
cell = Cell.parse(sys.argv[1])
case = registry.load(sys.argv[2:] or [registry.BUILTIN]).cases[cell.case]
seen = []
inputs = Execution.inputs
def logged(self, example):
    seen.append(str(example))
    return inputs(self, example)
Execution.inputs = logged
work = tempfile.mkdtemp()
device = machine.cells_device()
result = Execution(cell, case, Settings(workdir=work, packages=os.path.join(work, "packages"), caches=work), device,
                   announce=lambda s: None, broken_dtypes=probe.broken_dtypes(device, None)).run()
print("examples:", len(seen)); [print("  ", e) for e in seen[:40]]
print("RESULT", cell.id, result.outcome.value, result.stage and result.stage.value, (result.message or "")[:300])

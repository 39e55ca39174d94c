"""How long an autotuner times each config in a cell.

A cell checks that every config of an autotuned kernel runs right on the cell's own tensors: the autotuner
runs each config there, with its reset_to_zero and restore_value hooks, then the chosen one runs for the
result. Which config is fastest is not what a cell measures, and with Triton's defaults (25 ms of warm-up and
100 ms of repetitions a config, for every new input size, in every path that launches the kernel) the timing
was most of the matrix's time. So a cell's processes time with a budget: every call of Triton's benchmarker
(`triton.testing.do_bench`, which Triton's autotuners use unless given their own) has its warm-up and its
repetitions capped at BUDGET_MS each. It still runs each config (once, five times for its estimate, then at
least once warming up and once timed). `--perf` keeps Triton's timing whole, and the chart says which a run
used (the fingerprint's autotune_timing).
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Callable

ENV = "TCM_AUTOTUNE_TIMING"  # "budget" (the default for cells) or "full" (--perf)
BUDGET, FULL = "budget", "full"
BUDGET_MS = 1  # warm-up and repetitions, each, per timing call

DESCRIBED = {
    BUDGET: (f"budget: Triton's benchmarker times each autotuning config with at most {BUDGET_MS} ms of warm-up and "
             f"{BUDGET_MS} ms of repetitions (each config still runs on the cell's tensors); --perf times in full"),
    FULL: "full: Triton's benchmarker with its own warm-up and repetitions (--perf)",
}


def chosen(perf: bool) -> str:
    return FULL if perf else BUDGET


def install() -> None:
    """In a process that runs cells: cap Triton's benchmarker as ENV says (unset: the budget). Before the case
    modules are imported, so a module that binds `do_bench` at its import binds the capped one."""
    if os.environ.get(ENV, BUDGET) != BUDGET:
        return
    import triton.testing  # here, not at the top: the plugin's side reads DESCRIBED without triton

    if getattr(triton.testing.do_bench, "_tcm_budget", False):
        return
    triton.testing.do_bench = _capped(triton.testing.do_bench)


def _capped(do_bench: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(do_bench)

    @functools.wraps(do_bench)
    def capped(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        for name in ("warmup", "rep"):
            if isinstance(bound.arguments.get(name), (int, float)):
                bound.arguments[name] = min(bound.arguments[name], BUDGET_MS)
        return do_bench(*bound.args, **bound.kwargs)

    capped._tcm_budget = True  # type: ignore[attr-defined]
    return capped

"""What a case's own code can see of the process it runs in, as one JSON object: the invisibility audit reads it in a
runner, during cells, and in a fresh `python` that imports the case, and compares the two (test_invisible).

Each key names one thing code could read (`environ:TORCHINDUCTOR_CACHE_DIR`, `dynamo_config:recompile_limit`,
`replaced:torch.cuda.is_available`); harness.execution.conditions says which of them a cell deliberately runs with
otherwise, and why. Values are strings, so that the snapshot survives JSON as it was taken.
"""

from __future__ import annotations

import faulthandler
import gc
import inspect
import logging
import os
import resource
import signal
import sys
import threading
import warnings
from typing import Any

import torch

# Namespaces whose functions a harness might be tempted to replace: each public function's defining module and
# qualified name, which a stand-in does not share with the function it stands in for.
WATCHED_NAMESPACES = ("torch", "torch.cuda", "torch.compiler", "torch.library", "torch.autograd", "torch._dynamo", "torch.export",
                      "triton", "triton.testing", "triton.runtime", "triton.runtime.jit", "triton.runtime.autotuner", "inspect",
                      "functools", "os", "builtins", "importlib", "subprocess", "multiprocessing")
# Functions whose place in Dynamo's tables decides how a traced call of them goes: constant-folded, traced, or skipped.
DEVICE_QUESTIONS = ("torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.current_device", "torch.cuda.get_device_capability",
                    "torch.cuda.get_device_properties", "torch.cuda.get_device_name", "torch.cuda.is_initialized",
                    "torch.accelerator.is_available", "torch.compiler.is_compiling", "torch.version.cuda")
RESOURCES = ("RLIMIT_NOFILE", "RLIMIT_STACK", "RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_NPROC")


def _named(value: Any) -> str:
    code = getattr(value, "__code__", None)
    where = os.path.basename(code.co_filename) if code is not None else ""
    return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)} {where}".strip()


def _resolve(dotted: str) -> Any:
    import importlib

    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _replaced() -> dict[str, str]:
    import importlib

    found = {}
    for name in WATCHED_NAMESPACES:
        namespace = importlib.import_module(name)
        for attr, value in sorted(vars(namespace).items()):
            if attr.startswith("_") or not (inspect.isfunction(value) or inspect.isbuiltin(value)):
                continue
            found[f"replaced:{name}.{attr}"] = _named(value)
    return found


def _dynamo_tables() -> dict[str, str]:
    import torch._dynamo.trace_rules as trace_rules
    import torch._dynamo.variables.torch as torch_variables

    found = {}
    for dotted in DEVICE_QUESTIONS:
        value = _resolve(dotted)
        if not callable(value):
            found[f"value:{dotted}"] = repr(value)
            continue
        folded = value in torch_variables.constant_fold_functions
        try:
            rule = trace_rules.lookup(value)
            rule_name = getattr(rule, "__name__", repr(rule))
        except Exception as exc:  # noqa: BLE001 - what the lookup says is what Dynamo would meet
            rule_name = f"raises {type(exc).__name__}"
        found[f"dynamo_table:{dotted}"] = f"constant-folded={folded} rule={rule_name}"
    return found


def _shown(value: Any) -> str:
    """repr, with a set's members in order: two equal sets can iterate differently."""
    return repr(sorted(value, key=repr)) if isinstance(value, (set, frozenset)) else repr(value)


def _config(prefix: str, module: Any) -> dict[str, str]:
    return {f"{prefix}:{key}": _shown(value) for key, value in sorted(module.get_config_copy().items())}


def _triton_knobs() -> dict[str, str]:
    import triton.knobs as knobs

    found = {}
    for group in sorted(n for n in dir(knobs) if not n.startswith("_")):
        value = getattr(knobs, group)
        if not isinstance(value, knobs.base_knobs):
            continue
        for key in sorted(value.knob_descriptors):
            try:
                found[f"triton_knob:{group}.{key}"] = repr(getattr(value, key))
            except Exception as exc:  # noqa: BLE001
                found[f"triton_knob:{group}.{key}"] = f"raises {type(exc).__name__}"
    return found


def _signals() -> dict[str, str]:
    found = {}
    for sig in signal.valid_signals():
        try:
            handler = signal.getsignal(sig)
        except (ValueError, OSError):
            continue
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        found[f"signal:{name}"] = handler.name if isinstance(handler, signal.Handlers) else _named(handler) if handler else "None"
    return found


def _process() -> dict[str, str]:
    root = logging.getLogger()
    found = {
        "cwd": os.getcwd(),
        "sys.path": repr([os.path.abspath(p) if p else p for p in sys.path]),
        "argv0": sys.argv[0] if sys.argv else "",
        "__main__": getattr(sys.modules.get("__main__"), "__spec__", None) and sys.modules["__main__"].__spec__.name or "none",
        "gc.frozen": str(gc.get_freeze_count() > 0),
        "gc.enabled": str(gc.isenabled()),
        "gc.threshold": repr(gc.get_threshold()),
        "threads": str(threading.active_count()),
        "faulthandler": str(faulthandler.is_enabled()),
        "recursion_limit": str(sys.getrecursionlimit()),
        "umask": oct(os.umask(0o22)),
        "session_leader": str(os.getsid(0) == os.getpid()),
        "stdin.isatty": str(sys.stdin.isatty() if sys.stdin else None),
        "stdout.isatty": str(sys.stdout.isatty() if sys.stdout else None),
        "warnings.filters": repr(warnings.filters[:8]),
        "logging.root": f"{logging.getLevelName(root.level)} {[type(h).__name__ for h in root.handlers]}",
        "modules.loaded": str(len(sys.modules)),
    }
    os.umask(int(found["umask"], 8))
    for name in RESOURCES:
        found[f"rlimit:{name}"] = repr(resource.getrlimit(getattr(resource, name)))
    return found


def _torch() -> dict[str, str]:
    found = {
        "torch:default_dtype": str(torch.get_default_dtype()),
        "torch:default_device": str(torch.get_default_device()) if hasattr(torch, "get_default_device") else "?",
        "torch:grad_enabled": str(torch.is_grad_enabled()),
        "torch:inference_mode": str(torch.is_inference_mode_enabled()),
        "torch:deterministic": str(torch.are_deterministic_algorithms_enabled()),
        "torch:float32_matmul_precision": torch.get_float32_matmul_precision(),
        "torch:threads": str(torch.get_num_threads()),
        "torch:interop_threads": str(torch.get_num_interop_threads()),
        "torch:cudnn.benchmark": str(torch.backends.cudnn.benchmark),
        "torch:cuda.matmul.allow_tf32": str(torch.backends.cuda.matmul.allow_tf32),
        "torch:compiling": str(torch.compiler.is_compiling()),
        "cuda:initialized": str(torch.cuda.is_initialized()),
    }
    if torch.cuda.is_initialized():
        found["cuda:current_device"] = str(torch.cuda.current_device())
    from torch._dynamo.utils import counters

    found["dynamo:counters"] = repr(sorted(k for k, v in counters.items() if v))
    return found


def _hypothesis() -> dict[str, str]:
    import hypothesis

    return {"hypothesis:profile": repr(hypothesis.settings._current_profile),
            "hypothesis:phases": repr(hypothesis.settings.default.phases),
            "hypothesis:in_test": str(hypothesis.currently_in_test_context())}


def snapshot() -> dict[str, str]:
    """Everything above, taken now."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    state = {f"environ:{k}": v for k, v in os.environ.items()}
    state.update(_process())
    state.update(_torch())
    state.update(_hypothesis())
    state.update(_config("dynamo_config", dynamo_config))
    state.update(_config("inductor_config", inductor_config))
    state.update(_triton_knobs())
    state.update(_signals())
    state.update(_replaced())
    state.update(_dynamo_tables())
    return state

"""The stage a failed call of a compiled artifact belongs to.

Compile, where Dynamo, Inductor or Triton could not build it, else run: the chart's own rule, which the reproducers
embed and the fresh processes use."""

from __future__ import annotations

import os

import torch._dynamo.exc as dynamo_exc
import torch._inductor.exc as inductor_exc

from harness.model.outcome import Stage


def compile_stage_exception_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean Dynamo or Inductor could not build the graph, raised on a compiled call."""
    types: list[type[BaseException]] = [dynamo_exc.TorchDynamoException]
    for name in ("InductorError", "LoweringException", "CppCompileError", "BackendCompilerFailed"):
        if hasattr(inductor_exc, name):
            types.append(getattr(inductor_exc, name))
    try:
        from triton.compiler.errors import CompilationError

        types.append(CompilationError)
    except ImportError:
        pass
    return tuple(types)


# Dynamo's frame conversion and symbolic interpreter: on the stack only while Dynamo traces a call, never while
# compiled code runs. An error they raise unwrapped (an internal AssertionError) is a failure to compile the call.
_TRACING_FILES = (os.path.join("_dynamo", "convert_frame.py"), os.path.join("_dynamo", "symbolic_convert.py"))


def _raised_while_tracing(error: BaseException) -> bool:
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_filename.endswith(_TRACING_FILES):
            return True
        frame = frame.tb_next
    return False


def stage_of_call(error: BaseException) -> Stage:
    """COMPILE for a compilation error, or one raised while Dynamo traced the call; RUN for any other."""
    return Stage.COMPILE if isinstance(error, compile_stage_exception_types()) or _raised_while_tracing(error) else Stage.RUN

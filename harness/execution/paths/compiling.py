"""torch.compile with a row's options, each dtype's program compiled anew.

The program the compile rows run, and the first compile of the training, warm-cache and precompiled rows. Plain
PyTorch: a cell's reproducer prints this file as it is."""

import contextlib

import torch


def dynamo_settings(settings):
    """Dynamo's `settings` ({name: value}) while a call runs, those this torch has: a flag a later torch dropped (as it
    made enable_aot_compile the default) is left out."""
    config = torch._dynamo.config
    return config.patch(**{name: value for name, value in (settings or {}).items() if hasattr(config, name)})


def own_function(fn):
    """A function of its own that calls `fn`: Dynamo keeps compiled code, and counts compiles against recompile_limit,
    per function (its code object), so each dtype's is counted alone, as a program of one dtype is."""
    def program_of_one_dtype(*values):
        return fn(*values)

    program_of_one_dtype.__code__ = program_of_one_dtype.__code__.replace()  # a code object of its own
    return program_of_one_dtype


def unbacked(compiled, batched):
    """Dim 0 of every batched tensor input marked unbacked before each call, as code that must not specialise on a
    data-dependent size does: the compiled code may assume nothing of it, not even that it is not 0 or 1."""
    def call(*values):
        for x, is_batched in zip(values, batched):
            if isinstance(x, torch.Tensor) and is_batched and x.dim() > 0:
                torch._dynamo.decorators.mark_unbacked(x, 0)
        return compiled(*values)

    return call


def in_context(compiled, inference_mode, settings):
    """Each call made under what the row's program sets around it: torch.inference_mode(), Dynamo's `settings`."""
    def call(*values):
        with contextlib.ExitStack() as context:
            if inference_mode:
                context.enter_context(torch.inference_mode())
            context.enter_context(dynamo_settings(settings))
            return compiled(*values)

    return call


def compiled(program, options, settings=None, marked_unbacked=False, batched=(), inference_mode=False):
    """torch.compile(program, **options), compiled at its first call; with Dynamo's `settings` a function of its own,
    with `marked_unbacked` its batch unbacked at every call, each call under inference_mode or `settings` as the row says."""
    artifact = torch.compile(own_function(program) if settings else program, **options)
    if marked_unbacked:
        artifact = unbacked(artifact, batched)
    if inference_mode or settings:
        artifact = in_context(artifact, inference_mode, settings)
    return artifact

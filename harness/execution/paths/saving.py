"""What the rows that save do: an exported program, the compile caches or a precompiled function saved, then loaded.

Saved here; loaded in a new Python process that imports the case and builds the style, as a serving process imports the
library that defines its operators and kernels before it loads a model. Plain PyTorch: a cell's reproducer prints this
file as it is.
"""

import torch

from harness.execution.paths.compiling import dynamo_settings


def save_program(exported, path, stage):
    """The exported program saved (torch.export.save); `stage("save")` around it."""
    with stage("save"):
        torch.export.save(exported, path)


def save_caches(path, stage):
    """The compile caches of what this process compiled saved as cache artifacts (torch.compiler.save_cache_artifacts)."""
    with stage("save"):
        artifacts = torch.compiler.save_cache_artifacts()
        if artifacts is None:
            raise RuntimeError("torch.compiler.save_cache_artifacts() returned None: the compile left no cache artifact to save")
        with open(path, "wb") as f:
            f.write(artifacts[0])


def precompile(program, options, settings, inputs, path, stage):
    """torch.compile(program, **options).aot_compile on the inputs, under Dynamo's `settings`, and the compiled function
    saved (save_compiled_function)."""
    with stage("compile"), dynamo_settings(settings):
        compiled_function = torch.compile(program, **options).aot_compile((tuple(inputs), {}))
    with stage("save"):
        compiled_function.save_compiled_function(path)


def load_program(path, program, options):
    """In the new process: the exported program loaded (torch.export.load), its module what runs."""
    return torch.export.load(path).module()


def load_caches(path, program, options):
    """In the new process, its compile caches empty: the cache artifacts loaded, then the style compiled again with the
    row's options, which finds what it compiles in them."""
    with open(path, "rb") as f:
        torch.compiler.load_cache_artifacts(f.read())
    return torch.compile(program, **options)


def load_precompiled(path, program, options):
    """In the new process: the precompiled function loaded in the globals of the style's function, as a program loads it
    beside the code it was compiled from (a builtin, a control's torch.abs, has none: torch's default then)."""
    with open(path, "rb") as f:
        return torch.compiler.load_compiled_function(f, f_globals=getattr(program, "__globals__", None))

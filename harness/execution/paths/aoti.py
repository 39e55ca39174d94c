"""AOTInductor: the exported program compiled into a package, and the package loaded in this Python process. The C++ and
fresh-process rows load the same package elsewhere. Plain PyTorch: a cell's reproducer prints this file as it is."""

import torch


def package(exported, path, stage):
    """The exported program compiled ahead of time into the package at `path`; `stage("aot_compile")` around it."""
    with stage("aot_compile"):
        return torch._inductor.aoti_compile_and_package(exported, package_path=path)


def load(package_path, stage):
    """The package loaded here, as a model served from Python loads it; `stage("aot_load")` around it."""
    with stage("aot_load"):
        return torch._inductor.aoti_load_package(package_path)

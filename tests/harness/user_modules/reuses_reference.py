"""A case file that reuses another case file's launcher and reference through that file's module: the module the run
imported, under the name the harness gives a lone case file (harness.authoring.registry.LONE_FILE), where the run was
given that file too; else its own import of it, by its name beside it."""

import sys

import shared_reference
import torch

from harness.authoring.registry import LONE_FILE


def _reusing(module):
    def launch(k, x: torch.Tensor) -> torch.Tensor:
        return module.launch(k, x)

    def reference(x):
        return module.copied(x)

    return launch, reference


launch, reference = _reusing(sys.modules.get(LONE_FILE + "shared_reference", shared_reference))
CASES = [shared_reference.copying("reuses_reference", reference, launch)]

"""A kernel library as libraries are written, for the harness's own tests: launchers that call their kernels
as module globals through helpers, allocate with torch, and ops shipped as a torch.library operator (one with
a fake of the wrong shape), an autograd.Function and a plain function. Imported by tests/harness/planted_shipped.py
the way a user's cases import their library; nothing here knows of the harness."""

from .ops import ScaleFunction, scale, scale_op, scale_op_wrong_fake, scale_plain

__all__ = ["ScaleFunction", "scale", "scale_op", "scale_op_wrong_fake", "scale_plain"]

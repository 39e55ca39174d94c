"""A module with kernels but no Case."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from copy_kernel import copy_kernel  # noqa: E402,F401

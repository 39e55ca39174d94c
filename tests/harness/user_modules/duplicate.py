"""A well-formed case whose name another module already took."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from malformed import COMMON  # noqa: E402

from harness import Case  # noqa: E402

CASE = Case(name="user_good", **COMMON)

"""A case module whose import raises."""

from harness import Case  # noqa: F401

SETTINGS = {"block": 128}
BLOCK = SETTINGS["blocks"]  # a typo: the import fails with KeyError on this line

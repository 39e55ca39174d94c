"""A user's cases adapted from those a library builds (tcm_library_with_cases): this file makes no Case of its own,
it renames the library's."""

import dataclasses

import tcm_library_with_cases

CASES = [dataclasses.replace(case, name=f"adapted_{case.name}") for case in tcm_library_with_cases.CASES]

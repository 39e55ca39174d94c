"""What the library's launchers share: its block size and grid."""

import triton

from ._executions import executed

executed.append(__name__)

BLOCK = 64


def grid(n_elements: int) -> tuple[int]:
    return (triton.cdiv(n_elements, BLOCK),)

"""An embedding lookup: an int64 index tensor picks rows of a table; its gradient is a scatter-add."""

from typing import Optional

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs

ROWS = 37  # the table's rows: few, so that a batch of indices hits each row several times


@triton.jit
def gather_rows_kernel(table_ptr, index_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    i = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < dim
    row = tl.load(index_ptr + i)
    tl.store(out_ptr + i * dim + cols, tl.load(table_ptr + row * dim + cols, mask=mask), mask=mask)


def launch(k, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    n, dim = index.shape[0], table.shape[1]
    out = k.empty((n, dim), dtype=table.dtype, device=table.device)
    k.gather_rows_kernel[(n,)](table, index, out, dim, BLOCK_D=triton.next_power_of_2(dim))
    return out


def backward(k, grad: torch.Tensor, index: torch.Tensor, table: torch.Tensor) -> tuple[Optional[torch.Tensor], torch.Tensor]:
    """No gradient for the index; the table's sums the rows of grad that looked each row up."""
    return None, torch.zeros_like(table).index_add_(0, index, grad)


def make_inputs(shape, dtype, device, generator):
    n, dim = shape
    index = torch.randint(0, ROWS, (n,), generator=generator, dtype=torch.int64)
    table = torch.randn((ROWS, dim), generator=generator)
    return index.to(device), table.to(device=device, dtype=dtype)


CASE = Case(
    name="embedding_gather",
    kernels=(gather_rows_kernel,),
    launch=launch,
    reference=lambda index, table: torch.nn.functional.embedding(index, table),
    make_inputs=make_inputs,
    shapes=inputs.shapes(1024, 130),  # (lookups, embedding width)
    example_shape=(64, 33),
    max_batch=1 << 16,
    unbatched=frozenset({"table"}),
    backward=Backward(backward),
    tags=frozenset({"gather", "int64 index", "training"}),
    description="an int64 index tensor picks rows of a table; the table's gradient is a scatter-add (index_add)",
)

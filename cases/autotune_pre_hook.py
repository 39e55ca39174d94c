"""An autotuned kernel whose configs zero the output in a `pre_hook` before each launch: a block-wise atomic sum
relies on it. A compiler that launches the kernel without running the config's pre_hook (or runs it once, before
timing) leaves last launch's sums in the output."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs


def _zero_out(args):
    args["out_ptr"].zero_()


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, pre_hook=_zero_out), triton.Config({"BLOCK": 128}, pre_hook=_zero_out)],
    key=["n_cols"],
)
@triton.jit
def row_sum_atomic_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """Each program adds one block of a row into the row's sum."""
    row, block = tl.program_id(0), tl.program_id(1)
    cols = block * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x.to(tl.float32), axis=0))


def launch(k, x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = k.empty(rows, dtype=torch.float32, device=x.device)  # NaN-filled: only the pre_hook makes it zero
    grid = lambda meta: (rows, triton.cdiv(cols, meta["BLOCK"]))
    k.row_sum_atomic_kernel[grid](x, out, cols)
    return out


def reference(x):
    return x.float().sum(dim=1)


CASE = Case(
    name="autotune_pre_hook",
    kernels=(row_sum_atomic_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(64, 600),
    example_shape=(4, 300),
    dtypes=(torch.float32,),
    tags=frozenset({"autotune", "atomics", "pre_hook"}),
    description="@triton.autotune whose Configs zero the output in pre_hook; a block-wise atomic row sum",
)

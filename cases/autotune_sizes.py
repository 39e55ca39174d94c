"""One autotuned kernel launched on three sizes within one call: each size is a key of its own, and only a
config whose block covers the row is right for it. A compiler that reuses one config for every size gets
the wider rows wrong."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


def _covering(configs, named_args, **kwargs):
    """Configs whose BLOCK covers the row: the kernel reads a row in one block."""
    fits = [c for c in configs if c.kwargs["BLOCK"] >= named_args["n_cols"]]
    return fits or configs[-1:]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})],
    key=["n_cols"],
    prune_configs_by={"early_config_prune": _covering},
)
@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    """The max of the first n_cols of each row, read in one block."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


def _widths(cols):
    return (max(1, cols // 4), max(1, cols // 2), cols)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    maxima = []
    for width in _widths(cols):  # three keys of the autotuner in one call
        out = k.empty(rows, dtype=x.dtype, device=x.device)
        k.row_max_kernel[(rows,)](x, out, width, x.stride(0))
        maxima.append(out)
    return torch.stack(maxima, dim=1)


def reference(x):
    return torch.stack([x[:, :width].amax(dim=1) for width in _widths(x.shape[1])], dim=1)


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    dx = torch.zeros_like(x)
    for n, width in enumerate(_widths(x.shape[1])):
        part = x[:, :width]
        dx[:, :width] += (part == part.amax(dim=1, keepdim=True)) * grad[:, n : n + 1]
    return dx


def make_inputs(shape, dtype, device, generator):
    # A permutation per row: no ties, so the gradient of the max is one element.
    rows, cols = shape
    x = torch.argsort(torch.rand((rows, cols), generator=generator), dim=1).float()
    return (x.to(device=device, dtype=dtype),)


CASE = Case(
    name="autotune_sizes",
    kernels=(row_max_kernel,),
    launch=launch,
    reference=reference,
    make_inputs=make_inputs,
    shapes=inputs.shapes(64, 500),
    example_shape=(4, 300),
    max_batch=1 << 14,
    dtypes=(torch.float32, torch.float16),  # bfloat16 would round the permutation's values into ties
    backward=Backward(backward),
    tags=frozenset({"autotune", "reduction"}),
    description="three widths of each row in one call, each its own autotune key (n_cols); only a block covering the row is right",
)

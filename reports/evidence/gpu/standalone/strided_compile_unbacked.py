"""strided under torch.compile with the batch unbacked: torch's own failure, or the harness's allocator's?

Chart signature, case strided (float32, example (8, 65), a transposed view): "backend='inductor' raised:"
(BackendCompilerFailed, compile) for raw, raw_autograd, triton_op on compile_unbacked only. Detail:
"GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(65*u0, 0) | (Eq(u0, 1) &
Eq(Max(1, u0), 1)) ... Caused by: (_inductor/fx_passes/joint_graph.py:451 in constant_fold_uniform_value)".
Harness: builders.py:compiled + _batch_unbacked (mark_unbacked(x, 0) before each call to
torch.compile(fn, fullgraph=True)); the launcher's k.empty_like is wrapping.py:empty_like, which is
torch.full_like(x, NaN): a uniform-value tensor, what constant_fold_uniform_value works on.
Here: the raw launcher and the triton_op as a user writes them (torch.empty_like) and the same allocating
with torch.full_like(x, nan) as the harness does, each compiled fullgraph with mark_unbacked(x, 0);
contrast: dynamic=True without mark_unbacked (expected PASS).
Verdict: FAIL with empty_like = the style/path's own behaviour; PASS with empty_like and FAIL with full_like =
an artifact of the harness's poisoned allocator (though one that a user writing full_like/zeros_like meets).
"""
import sys

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

DEVICE = torch.device("cuda")


@triton.jit
def double_strided_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_x_col, stride_out_row, stride_out_col,
                          BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols * stride_x_col, mask=mask)
    tl.store(out_ptr + row * stride_out_row + cols * stride_out_col, x * 2, mask=mask)


def double(x):
    out = torch.empty_like(x)  # keeps x's layout: a transposed input gets a transposed output
    n_rows, n_cols = x.shape
    grid = (n_rows, triton.cdiv(n_cols, 64))
    double_strided_kernel[grid](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK_C=64)
    return out


def double_nan(x):
    out = torch.full_like(x, float("nan"))  # as the harness's k.empty_like allocates
    n_rows, n_cols = x.shape
    grid = (n_rows, triton.cdiv(n_cols, 64))
    double_strided_kernel[grid](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK_C=64)
    return out


def double_filled(x):
    out = torch.empty_like(x).fill_(float("nan"))  # poisoned by an in-place fill instead
    n_rows, n_cols = x.shape
    grid = (n_rows, triton.cdiv(n_cols, 64))
    double_strided_kernel[grid](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK_C=64)
    return out


@triton_op("standalone::double", mutates_args=())
def double_op(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    grid = (n_rows, triton.cdiv(n_cols, 64))
    wrap_triton(double_strided_kernel)[grid](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                                             BLOCK_C=64)
    return out


@triton_op("standalone::double_nan", mutates_args=())
def double_nan_op(x: torch.Tensor) -> torch.Tensor:
    out = torch.full_like(x, float("nan"))  # as the harness's k.empty_like allocates
    n_rows, n_cols = x.shape
    grid = (n_rows, triton.cdiv(n_cols, 64))
    wrap_triton(double_strided_kernel)[grid](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                                             BLOCK_C=64)
    return out


def check(label, fn, unbacked):
    try:
        torch._dynamo.reset()
        x = torch.randn(65, 8, device=DEVICE).t()  # (8, 65), stride (1, 8): as make_inputs at example_shape
        if unbacked:  # as harness/builders.py:_batch_unbacked, before the call
            torch._dynamo.decorators.mark_unbacked(x, 0)
        got = torch.compile(fn, fullgraph=True, dynamic=None if unbacked else True)(x)
        bad = ~torch.isclose(got, x * 2)
        print(f"CHECK {label}: " + (f"WRONG {bad.sum().item()} of {got.numel()} elements differ from x * 2" if bad.any() else "PASS"), flush=True)
    except BaseException as e:
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}", flush=True)
        print(f"  {label}: " + " ".join(str(e).split())[:500], file=sys.stderr)  # the real error follows the first line


check("raw (torch.empty_like), compile fullgraph, dim 0 unbacked", double, True)
check("raw (torch.full_like nan, as the harness), compile fullgraph, dim 0 unbacked", double_nan, True)
check("triton_op (torch.empty_like), compile fullgraph, dim 0 unbacked", lambda x: torch.ops.standalone.double(x), True)
check("triton_op (torch.full_like nan, as the harness), compile fullgraph, dim 0 unbacked",
      lambda x: torch.ops.standalone.double_nan(x), True)
check("raw (torch.empty_like(x).fill_(nan)), compile fullgraph, dim 0 unbacked", double_filled, True)
check("raw (torch.full_like nan), compile fullgraph, dim 0 unbacked, contiguous input (contrast)",
      lambda x: double_nan(x.contiguous()), True)
check("raw (torch.empty_like), compile fullgraph dynamic=True (contrast)", double, False)
check("triton_op (torch.empty_like), compile fullgraph dynamic=True (contrast)", lambda x: torch.ops.standalone.double(x), False)

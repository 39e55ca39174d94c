"""heuristics_autotune, raw launcher: does the batch specialise on its own under strict export and unbacked compile?

Chart signatures, case heuristics_autotune (float32, example (1024,)): "Constraints violated (batch)! For more
information, run with TORCH_LOGS="+dynamic"." (UserError, export) for raw on export_strict/aoti_strict/
aoti_cpp_strict; detail: "Not all values of batch ... batch <= 4194304 satisfy the generated guard
(L['inputs'][0].size()[0] % 1024) == 0"; and "Could not guard on data-dependent expression Eq(Mod(u0, 1024), 0)"
(UserError, compile) for raw and raw_autograd on compile_unbacked, raised in Heuristics.run (autotuner.py).
Harness: builders.py:_export (torch.export.export(_Program(fn), strict=True, dynamic_shapes=dynamic_batch(...)),
Dim("batch", min=1, max=max_batch=1 << 22)); builders.py:compiled + _batch_unbacked (mark_unbacked(x, 0) before
each call to torch.compile(fn, fullgraph=True)).
Here: the raw launcher as a user writes it under strict export with that Dim and under compile with dim 0
unbacked; contrasts: compile dynamic=True (backed batch, expected PASS), and the same kernel without the
@triton.heuristics (its inner @triton.autotune keyed on n_elements, MASKLESS=False given) under both paths:
a PASS there says the heuristic's n_elements % 1024 (a constexpr chosen from the size), not the autotune key,
is what specialises the batch. Verdict: FAIL like the chart = the kernel's own behaviour; PASS = the harness's.
"""
import sys

import torch
import triton
import triton.language as tl

DEVICE = torch.device("cuda")


@triton.heuristics({"MASKLESS": lambda args: args["n_elements"] % 1024 == 0})
@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 64}, num_warps=2),
        triton.Config({"BLOCK": 256}, num_warps=4),
    ],
    key=["n_elements"],
)
@triton.jit
def gelu_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr, MASKLESS: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKLESS:
        x = tl.load(in_ptr + offsets).to(tl.float32)
    else:
        x = tl.load(in_ptr + offsets, mask=offsets < n_elements).to(tl.float32)
    y = 0.5 * x * (1 + tl.math.erf(x * 0.7071067811865476))
    if MASKLESS:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=offsets < n_elements)


def gelu(x):
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)
    gelu_kernel[grid](x, out, n_elements)  # BLOCK from the autotuner, MASKLESS from the heuristic
    return out


gelu_autotuned = gelu_kernel.fn  # the @triton.autotune under the @triton.heuristics


def gelu_no_heuristic(x):
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)
    gelu_autotuned[grid](x, out, n_elements, MASKLESS=False)
    return out


class Model(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn  # the user's function

    def forward(self, x):
        return self.fn(x)


def check(label, how, fn):
    try:
        torch._dynamo.reset()
        x = torch.randn(1024, device=DEVICE)  # the case's example_shape
        if how == "export":
            batch = torch.export.Dim("batch", min=1, max=1 << 22)  # the case's max_batch
            fn = torch.export.export(Model(fn), (x,), strict=True, dynamic_shapes=({0: batch},)).module()
        elif how == "unbacked":
            fn = torch.compile(fn, fullgraph=True)
            torch._dynamo.decorators.mark_unbacked(x, 0)
        else:
            fn = torch.compile(fn, fullgraph=True, dynamic=True)
        got, want = fn(x), torch.nn.functional.gelu(x)
        bad = ~torch.isclose(got, want, rtol=1.3e-6, atol=1e-5)
        print(f"CHECK {label}: " + (f"WRONG {bad.sum().item()} of {got.numel()} elements differ from gelu" if bad.any() else "PASS"), flush=True)
    except BaseException as e:
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}", flush=True)
        print(f"  {label}: " + " ".join(str(e).split())[:700], file=sys.stderr)  # which guard, from where


check("raw, strict export, Dim batch max 1<<22", "export", gelu)
check("raw, compile fullgraph, dim 0 unbacked", "unbacked", gelu)
check("raw, compile fullgraph dynamic=True (contrast)", "dynamic", gelu)
check("raw without @triton.heuristics, strict export, Dim batch max 1<<22 (contrast)", "export", gelu_no_heuristic)
check("raw without @triton.heuristics, compile fullgraph, dim 0 unbacked (contrast)", "unbacked", gelu_no_heuristic)

"""Signature: "ListVariable(length=N) is already tracked for mutation. This could be because you are not using
VariableBuilder..." (AssertionError; stage run on the compile rows, export on export_strict/aoti_strict/aoti_cpp_strict).
Cells: autotune_sizes, raw and raw_autograd on every compile row (compile_*, train_compile_*, warm_cache_edit), raw
on the strict export rows. The launcher (cases/autotune_sizes.py) launches one @triton.autotune(prune_configs_by=...)
kernel three times a call (three widths: three autotune keys). The harness (harness/builders.py:compiled, _export)
compiles the style's callable with the row's options and calls it on example_shape (4, 300) float32, or exports it
strictly with a dynamic batch. Dynamo wraps the autotuner's `configs` list at each launch, the same list each time.
Verdict: FAIL like the chart = PyTorch's own behaviour; PASS = a harness artifact (the harness reaches the kernel as
`k.row_max_kernel`, a namespace attribute; here it is a module global). Contrast: the triton_op under torch.compile
(the chart has it passing).
"""
import torch
import triton
import triton.language as tl

DEVICE = torch.device("cuda")


def _covering(configs, named_args, **kwargs):  # configs whose BLOCK covers the row: a row is read in one block
    fits = [c for c in configs if c.kwargs["BLOCK"] >= named_args["n_cols"]]
    return fits or configs[-1:]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})],
    key=["n_cols"],
    prune_configs_by={"early_config_prune": _covering},
)
@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


def _widths(cols):
    return (max(1, cols // 4), max(1, cols // 2), cols)


def row_max(x):
    rows, cols = x.shape
    maxima = []
    for width in _widths(cols):  # three keys of the autotuner in one call
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        row_max_kernel[(rows,)](x, out, width, x.stride(0))
        maxima.append(out)
    return torch.stack(maxima, dim=1)


class RowMaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return row_max(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dx = torch.zeros_like(x)
        for n, width in enumerate(_widths(x.shape[1])):
            part = x[:, :width]
            dx[:, :width] += (part == part.amax(dim=1, keepdim=True)) * grad[:, n : n + 1]
        return dx


def op(x):
    return RowMaxFn.apply(x)


@torch.library.triton_op("standalone::row_max", mutates_args=())
def row_max_op(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    maxima = []
    for width in _widths(cols):
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        torch.library.wrap_triton(row_max_kernel)[(rows,)](x, out, width, x.stride(0))
        maxima.append(out)
    return torch.stack(maxima, dim=1)


class Model(torch.nn.Module):
    def forward(self, x):
        return row_max(x)


def reference(x):
    return torch.stack([x[:, :width].amax(dim=1) for width in _widths(x.shape[1])], dim=1)


def exported(x):
    batch = torch.export.Dim("batch", min=1, max=1 << 14)
    return torch.export.export(Model(), (x,), strict=True, dynamic_shapes=({0: batch},)).module()


def permutations(rows, cols):  # a permutation per row, as the case's make_inputs: no ties
    return torch.argsort(torch.rand((rows, cols)), dim=1).float().to(DEVICE)


x, x2 = permutations(4, 300), permutations(8, 100)
for label, make, inputs in [
    ("raw launcher, torch.compile(fullgraph=True), (4, 300) then (8, 100) (raw compile_fullgraph)",
     lambda: torch.compile(row_max, fullgraph=True), (x, x2)),
    ("raw launcher, export(strict=True), dynamic batch, run on (4, 300) and (8, 300) (raw export_strict)",
     lambda: exported(x), (x, permutations(8, 300))),
    ("autograd.Function through a plain function, torch.compile(fullgraph=True) (raw_autograd compile_fullgraph)",
     lambda: torch.compile(op, fullgraph=True), (x, x2)),
    ("triton_op, torch.compile(fullgraph=True), (4, 300) then (8, 100) (contrast)",
     lambda: torch.compile(lambda t: torch.ops.standalone.row_max(t), fullgraph=True), (x, x2)),
]:
    torch._dynamo.reset()  # each check compiles from scratch, as each cell does
    try:
        fn = make()
        outs = [fn(t) for t in inputs]
        torch.cuda.synchronize()
    except BaseException as e:
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", flush=True)
        continue
    try:
        for out, t in zip(outs, inputs):
            torch.testing.assert_close(out, reference(t))
        print(f"CHECK {label}: PASS", flush=True)
    except BaseException as e:
        print(f"CHECK {label}: WRONG {' '.join(str(e).split())[:200]}", flush=True)

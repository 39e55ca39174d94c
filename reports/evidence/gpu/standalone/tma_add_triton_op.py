"""tma_add as a triton_op (float32, 1-D TensorDescriptor.from_tensor, Hopper only).

Chart signatures, case tma_add, style triton_op: "output N differs from the reference: N of N elements, N NaN
where the reference has a number (never written?)" (WRONG, run) on compile_fullgraph/default/dynamic/
cudagraphs/max_autotune/cpp_wrapper, warm_cache_edit, every aoti_*; "Could not guard on data-dependent
expression uN > N" (UserError, compile) on compile_unbacked; opcheck "test_aot_dispatch_dynamic: Outputs of
the operator are different in eager-mode PyTorch vs AOTDispatcher". Raw passes those compile rows.
Harness: wrapping.py:_triton_op_body (wrap_triton(kernel) in a generated body that calls the case's launcher;
k.empty_like = torch.full_like(x, NaN)); builders.py:compiled (+ _batch_unbacked's mark_unbacked);
subsystems.py:programs (opcheck). Here the user's own op (torch.empty_like), the same op allocating as the
harness does (full_like NaN: NaN left = never written), opcheck, and the raw launcher (contrast, PASS).
Verdict: WRONG/FAIL like the chart = triton_op's own behaviour (torch traces wrap_triton outside Dynamo with
tma_descriptor_metadata={}, so a write through a descriptor is not seen); PASS = a harness artifact.
"""
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton
from triton.tools.tensor_descriptor import TensorDescriptor

DEVICE = torch.device("cuda")
BLOCK = 128  # TMA moves at least 16 bytes a block


@triton.jit
def tma_add_kernel(x_desc, y_desc, out_desc, BLOCK: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    out_desc.store([offset], x_desc.load([offset]) + y_desc.load([offset]))  # out-of-bounds parts are clipped


@triton_op("standalone::tma_add", mutates_args=())
def tma_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    descs = [TensorDescriptor.from_tensor(t, block_shape=[BLOCK]) for t in (x, y, out)]
    wrap_triton(tma_add_kernel)[(triton.cdiv(out.numel(), BLOCK),)](*descs, BLOCK=BLOCK)
    return out


@triton_op("standalone::tma_add_nan", mutates_args=())
def tma_add_nan(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.full_like(x, float("nan"))  # as the harness's k.empty_like allocates
    descs = [TensorDescriptor.from_tensor(t, block_shape=[BLOCK]) for t in (x, y, out)]
    wrap_triton(tma_add_kernel)[(triton.cdiv(out.numel(), BLOCK),)](*descs, BLOCK=BLOCK)
    return out


def raw_add(x, y):
    out = torch.empty_like(x)
    descs = [TensorDescriptor.from_tensor(t, block_shape=[BLOCK]) for t in (x, y, out)]
    tma_add_kernel[(triton.cdiv(out.numel(), BLOCK),)](*descs, BLOCK=BLOCK)
    return out


def say(label, outcome):
    print(f"CHECK {label}: {outcome}", flush=True)


def check(label, fn, compile=True, unbacked=False):
    try:
        torch._dynamo.reset()
        x, y = torch.randn(304, device=DEVICE), torch.randn(304, device=DEVICE)  # 304: a multiple of 8
        if unbacked:  # as harness/builders.py:_batch_unbacked, before the call
            torch._dynamo.decorators.mark_unbacked(x, 0)
            torch._dynamo.decorators.mark_unbacked(y, 0)
        got = (torch.compile(fn, fullgraph=True) if compile else fn)(x, y)
        bad, nan = ~torch.isclose(got, x + y), got.isnan().sum().item()
        say(label, f"WRONG {bad.sum().item()} of {got.numel()} elements differ from x + y, {nan} NaN" if bad.any() else "PASS")
    except BaseException as e:
        say(label, f"FAIL {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}")


# Compiled triton_op checks first: an eager result freed earlier could be reused by an output never written.
check("triton_op (torch.empty_like), compile fullgraph", lambda x, y: torch.ops.standalone.tma_add(x, y))
check("triton_op (torch.full_like nan, as the harness), compile fullgraph", lambda x, y: torch.ops.standalone.tma_add_nan(x, y))
check("triton_op (torch.empty_like), compile fullgraph, dim 0 unbacked", lambda x, y: torch.ops.standalone.tma_add(x, y), unbacked=True)
check("raw launcher, compile fullgraph (contrast)", raw_add)
check("triton_op (torch.empty_like), eager (contrast)", lambda x, y: torch.ops.standalone.tma_add(x, y), compile=False)
try:
    x, y = torch.randn(304, device=DEVICE), torch.randn(304, device=DEVICE)
    report = torch.library.opcheck(torch.ops.standalone.tma_add.default, (x, y), raise_exception=False)
    failed = [(test, error) for test, error in report.items() if error != "SUCCESS"]
    for test, error in failed[:1]:
        say("triton_op, torch.library.opcheck", f"FAIL {type(error).__name__}: {len(failed)} of {len(report)} opcheck "
            f"tests fail; {test}: {(str(error).strip().splitlines() or [''])[0]}")
    if not failed:
        say("triton_op, torch.library.opcheck", "PASS")
except BaseException as e:
    say("triton_op, torch.library.opcheck", f"FAIL {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}")

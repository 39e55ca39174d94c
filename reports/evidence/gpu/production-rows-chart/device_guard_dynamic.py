# device_guard's launcher as a user writes it (torch.empty_like), under torch.compile(dynamic=True)
import contextlib, sys, traceback
import torch, triton, triton.language as tl

@triton.jit
def triple_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3, mask=mask)

def _block(device):
    if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9:
        return 256
    return 128

def _warps(device):
    if device.type != "cuda":
        return 4
    target = triton.runtime.driver.active.get_current_target()
    return 8 if target.backend == "cuda" and int(target.arch) >= 90 else 4

def launch(x):
    out = torch.empty_like(x)
    n = x.numel()
    block = _block(x.device)
    with torch.cuda.device(x.device) if x.device.type == "cuda" else contextlib.nullcontext():
        triple_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=_warps(x.device))
    return out

for dyn in (True, None, False):
    torch._dynamo.reset()
    f = torch.compile(launch, dynamic=dyn)
    try:
        for n in (300, 1000, 4096):
            x = torch.randn(n, device="cuda")
            torch.testing.assert_close(f(x), x * 3)
        print("dynamic", dyn, "pass")
    except Exception as e:
        print("dynamic", dyn, "FAIL", type(e).__name__, str(e).splitlines()[0][:200])
        if dyn: traceback.print_exc(limit=-12)

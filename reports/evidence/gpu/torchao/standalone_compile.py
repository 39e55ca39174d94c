"""torchao's scaled_int8_mm launcher under torch.compile in a fresh interpreter, outside the harness."""
import sys, torch
from torchao.prototype.quantized_training.int8_mm import scaled_int8_mm_cuda
g = torch.Generator().manual_seed(0)
A = torch.randint(-128, 128, (37, 45), generator=g, dtype=torch.int8).cuda()
B = torch.randint(-128, 128, (45, 96), generator=g, dtype=torch.int8).cuda()
r = torch.rand(37).cuda(); c = torch.rand(96).cuda()
print("eager", scaled_int8_mm_cuda(A, B, r, c).shape, flush=True)
for kw in ({}, {"dynamic": True}):
    torch._dynamo.reset()
    try:
        print("compile", kw, torch.compile(scaled_int8_mm_cuda, fullgraph=True, **kw)(A, B, r, c).shape, flush=True)
    except Exception as e:
        print("compile", kw, "failed:", type(e).__name__, str(e)[:400].replace("\n", " | "), flush=True)

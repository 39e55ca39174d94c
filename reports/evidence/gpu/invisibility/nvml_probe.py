"""GPU probe: does torch's NVML-based availability check start threads or initialize the CUDA driver, and who asks the
device during the zygote's and the template's imports?"""
import ctypes, os, sys, traceback, importlib, json, time

def threads():
    return len(os.listdir("/proc/self/task"))

def nvml_loaded():
    return any("libnvidia-ml" in l for l in open("/proc/self/maps"))

sys.path.insert(0, os.getcwd())
from harness.execution import zygote
import torch
print("after import torch: threads", threads(), "cuda_initialized", zygote.cuda_initialized(), "nvml", nvml_loaded())
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
t = time.perf_counter()
print("is_available (nvml):", torch.cuda.is_available(), f"{time.perf_counter()-t:.3f}s")
print("after nvml check: threads", threads(), "cuda_initialized", zygote.cuda_initialized(), "nvml", nvml_loaded())
time.sleep(0.5)
print("0.5 s later: threads", threads())
lib = ctypes.CDLL("libnvidia-ml.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
codes = []
for _ in range(8):
    rc = lib.nvmlShutdown(); codes.append(rc)
    if rc != 0: break
print("nvmlShutdown codes", codes)
time.sleep(0.2)
print("after shutdown: threads", threads(), "cuda_initialized", zygote.cuda_initialized())
del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
pid = os.fork()
if pid == 0:
    try:
        x = torch.ones(4, device="cuda") * 2
        print("child: cuda works:", x.sum().item(), flush=True)
    except Exception as e:
        print("child: cuda failed:", e, flush=True)
    os._exit(0)
os.waitpid(pid, 0)

# who asks the device during imports (fresh state of the spy in this process does not matter: torch modules)
asked = []
names = ["is_available", "device_count", "get_device_capability", "get_device_properties", "current_device", "_lazy_init", "get_device_name"]
real = {n: getattr(torch.cuda, n) for n in names}
def spy(n):
    def f(*a, **k):
        asked.append((n, "".join(traceback.format_stack(limit=6)[:-1])))
        return real[n](*a, **k)
    return f
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
for n in names:
    setattr(torch.cuda, n, spy(n))
for m in ["triton", "torch._inductor.package", "harness.execution.execute", "harness.environment.probe",
          "torch._inductor.compile_fx", "torch._dynamo.backends.inductor", "torch.export._trace"]:
    before = len(asked)
    importlib.import_module(m)
    print(f"import {m}: {len(asked)-before} device questions; threads {threads()} cuda_initialized {zygote.cuda_initialized()}")
for n in names:
    setattr(torch.cuda, n, real[n])
for n, s in asked:
    print("----", n); print(s)

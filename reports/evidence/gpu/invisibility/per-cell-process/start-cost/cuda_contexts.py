"""How fast processes forked from a torch-imported parent start CUDA, alone and many at once (start-cost/README)."""
import os, sys, time, json, signal
import torch

def child(w):
    t0 = time.perf_counter()
    avail = torch.cuda.is_available()
    t1 = time.perf_counter()
    torch.cuda.get_device_name()
    t2 = time.perf_counter()
    torch.empty(1, device="cuda"); torch.cuda.synchronize()
    t3 = time.perf_counter()
    os.write(w, (json.dumps([os.getpid(), t1 - t0, t2 - t1, t3 - t2]) + "\n").encode())

def run(conc, total, kill):
    began = time.perf_counter(); done = []; live = {}
    r, w = os.pipe()
    started = 0
    buf = b""
    while len(done) < total:
        while len(live) < conc and started < total:
            pid = os.fork()
            if pid == 0:
                os.close(r); child(w)
                if kill: time.sleep(60)
                os._exit(0)
            live[pid] = time.perf_counter(); started += 1
        chunk = os.read(r, 65536); buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1); rec = json.loads(line); done.append(rec[1:])
            pid = rec[0]; live.pop(pid)  # it finished: end it, as a per-cell runner is ended
            if kill: os.kill(pid, signal.SIGKILL)
            else: os.waitpid(pid, 0)
    for pid in list(live):
        if kill: os.kill(pid, signal.SIGKILL)
    while True:
        try: os.waitpid(-1, 0)
        except ChildProcessError: break
    wall = time.perf_counter() - began
    med = lambda xs: sorted(xs)[len(xs)//2]
    parts = list(zip(*done))
    print(f"conc {conc:2d} kill {kill}: {total} contexts in {wall:.1f} s = {total/wall:.2f}/s; median is_available {med(parts[0]):.2f} "
          f"name {med(parts[1]):.2f} first tensor {med(parts[2]):.2f} s; max total {max(map(sum, done)):.2f}", flush=True)

for conc, total, kill in [(1, 6, False), (8, 48, True), (20, 80, True), (40, 120, True)]:
    run(conc, total, kill)

"""Inductor's CPU vector-ISA probe, run once per run instead of once per runner process.

Before its first C++ build (every AOTInductor package, CPU code), Inductor checks each vector ISA the
CPU claims by compiling a test library and starting a Python process that imports torch to load it:
26 s of a 38 s first AOTInductor compile on the GPU runner, paid again by every runner process, since
the answer is kept only in memory. Here the first process to need it probes, under a lock, and writes
what it found beside the run's caches; the others wait for that file instead of probing too. They reuse
the answer only when the probe accepted exactly the ISAs the CPU claims: then Inductor's own switch
`cpp.vec_isa_ok = True` (skip the probe, trust the CPU's flags) gives the same list, so the same build.
"""

from __future__ import annotations

import json
import os
from typing import Any

FILE = "tcm-vec-isa.json"


def _lists(probe: Any) -> tuple[list[str], list[str]]:
    """(what Inductor's probe accepts, what the CPU's flags claim), as ISA names."""
    import torch._inductor.config as config

    probed = [str(isa) for isa in probe()]
    with config.patch({"cpp.vec_isa_ok": True}):
        claimed = [str(isa) for isa in probe.__wrapped__()]
    return probed, claimed


def share(cache_dir: str) -> None:
    """Make this process's Inductor ask the run's shared answer instead of probing on its own."""
    import torch._inductor.config as config
    from torch._inductor import cpu_vec_isa

    if config.cpp.vec_isa_ok is not None or not hasattr(cpu_vec_isa.valid_vec_isa_list, "__wrapped__"):
        return  # set by the user, or a torch whose probe this does not know
    original = cpu_vec_isa.valid_vec_isa_list
    path = os.path.join(cache_dir, FILE)

    def valid_vec_isa_list() -> list[Any]:
        from torch.utils._filelock import FileLock

        cpu_vec_isa.valid_vec_isa_list = original  # asked once: later calls go straight to Inductor
        os.makedirs(cache_dir, exist_ok=True)
        with FileLock(path + ".lock"):
            if os.path.exists(path):
                with open(path) as f:
                    found = json.load(f)
                if found["agrees"]:
                    config.cpp.vec_isa_ok = True
                    return original()
            else:
                probed, claimed = _lists(original)
                tmp = f"{path}.{os.getpid()}"
                with open(tmp, "w") as f:
                    json.dump({"probed": probed, "claimed": claimed, "agrees": probed == claimed}, f)
                os.replace(tmp, path)
        return original()

    cpu_vec_isa.valid_vec_isa_list = valid_vec_isa_list


def recorded(cache_dir: str) -> dict[str, Any] | None:
    """What the run's probe found, for the fingerprint (None: no process needed it)."""
    try:
        with open(os.path.join(cache_dir, FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

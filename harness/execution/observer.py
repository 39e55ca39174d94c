"""What the compiler made of the kernel, read off the graphs a path produced (not off the style's name).
Did it trace into the Triton kernel, call an opaque operator, or hold neither?"""

from __future__ import annotations

import uuid
from typing import Any

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass

from harness.model.outcome import InGraph


def _target_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    name = target.name() if callable(getattr(target, "name", None)) else getattr(target, "__name__", target)
    return str(name)


class GraphObserver:
    """Records the operators in the graphs a path produced: exported graphs, and through `inductor_pass`
    every graph Inductor compiles."""

    def __init__(self) -> None:
        self.targets: set[str] = set()

    def record(self, graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if node.op == "call_function":
                self.targets.add(_target_name(node.target))
                if "auto_functionalized" in _target_name(node.target) and node.args:
                    self.targets.add(_target_name(node.args[0]))  # a mutating operator, functionalized

    def verdict(self, op_namespace: str) -> InGraph | None:
        if not self.targets:
            return None
        if any("triton_kernel_wrapper" in t for t in self.targets):
            return InGraph.TRACED
        if any(t.startswith(f"{op_namespace}::") or t.startswith(f"{op_namespace}.") for t in self.targets):
            return InGraph.OPAQUE
        return InGraph.ABSENT

    def inductor_pass(self) -> Any:
        """A post-grad pass that records each graph Inductor compiles and changes nothing. Its cache key is this
        observer's own: Inductor's FX graph and AOTAutograd caches save and look up as they do in a new process (a
        pass without a key makes them bypass both, and a cell would never meet what saving a graph with its kernel
        does), while a graph compiled by another cell of the run, whose observer is another, is never served to this
        one: each cell compiles on caches as cold as a new process's, and every graph it compiles is seen."""
        observer, key = self, f"tcm-observer-{uuid.uuid4().hex}"

        class Observe(CustomGraphPass):
            def __call__(self, graph: torch.fx.Graph) -> None:
                observer.record(graph)

            def uuid(self) -> str:
                return key

        return Observe()

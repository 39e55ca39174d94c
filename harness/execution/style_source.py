"""A wrapping style written out as source: harness.execution.wrapping's own definitions, bound as the chart binds them.

Its sources of the autograd.Function, of the operators' bodies (each kernel named in a `wrap_triton(kernel)` call) and
of their autograd, their free names bound to the case module's objects, and the launcher's rebinding."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from harness.authoring.case import Case, kernel_name
from harness.authoring.launcher import takes_namespace
from harness.execution.source_text import Source, embedded
from harness.model.columns import OP_NAMESPACE, OPERATOR_STYLES, Wrapping
from harness.model.errors import UsageError
from harness.model.rows import Row


class Names:
    """How the file names the case's objects: a module attribute where the case's module holds it, else the
    case's own field (case.launch, case.kernels[0])."""

    def __init__(self, case: Case, module: ModuleType):
        self.case, self.module = case, module
        self.attrs = {id(v): k for k, v in vars(module).items() if not k.startswith("__")}

    def of(self, value: Any, fallback: str) -> str:
        attr = self.attrs.get(id(value))
        return f"case_module.{attr}" if attr else fallback

    def case_expr(self) -> str:
        for name, value in vars(self.module).items():
            if isinstance(value, Case) and value.name == self.case.name:
                return f"case_module.{name}"
            if isinstance(value, (list, tuple)) and any(isinstance(c, Case) and c.name == self.case.name for c in value):
                return f'next(c for c in case_module.{name} if c.name == "{self.case.name}")'
        raise UsageError(f"case {self.case.name!r}: its module {self.module.__name__} holds no Case of that name")

    def kernel(self, kernels: tuple[Any, ...], index: int, field: str) -> str:
        return self.of(kernels[index], f"case.{field}[{index}]")


def rebinding_source() -> str:
    """How the chart calls a globals-form launcher with its kernels replaced (harness.authoring.launcher.rebound), as
    source: copies of the launcher and of the functions and modules it reads, each reading the replacement."""
    from harness.authoring import launcher

    return embedded("import inspect\nimport types\nfrom typing import Any, Callable, Mapping",
                     f"_NOT_REBOUND = {launcher._NOT_REBOUND!r}\nMAX_DEPTH = {launcher.MAX_DEPTH!r}",
                     launcher._global_names, launcher._Rebinder, launcher.rebound)


class StyleWriter:
    """Writes the cell's style into `source`, `program` last."""

    def __init__(self, case: Case, names: Names, style: Wrapping, row: Row, source: Source):
        self.case, self.names, self.style, self.row, self.source = case, names, style, row, source
        self.params = [p.name for p in case.input_parameters()]
        self.args = ", ".join(self.params)
        # What the backward is given, by name (Backward.takes): the names the chart's generated backwards have in scope.
        self.takes = ", ".join(case.backward_takes) if case.backward is not None else ""
        self.namespaces: dict[str, str] = {}  # the kernel namespaces the plain calls use, by name
        self.has_rebinding = False  # whether the file holds the rebinding of a globals-form launcher (rebound)
        self.generated = False  # whether it holds the chart's way of running a generated source (run_as_module)
        self.namespace_maker = False  # whether it holds wrapping.launcher_namespace

    def _namespace(self, kernels: tuple[Any, ...], field: str, wrap: bool) -> str:
        entries = []
        for i, kernel in enumerate(kernels):
            ref = self.names.kernel(kernels, i, field)
            entries.append(f"{kernel_name(kernel)}={'wrap_triton(' + ref + ')' if wrap else ref}")
        return f"types.SimpleNamespace({', '.join(entries + ['empty_like=empty_like', 'empty=empty'])})"

    def _plain_namespace(self, kernels: tuple[Any, ...], field: str) -> str:
        """The name of the namespace of the kernels as they are, built once (as wrapping.plain_call builds it)."""
        name = "k" if field == "kernels" else "k_backward"
        if name not in self.namespaces:
            self.namespaces[name] = f"{name} = {self._namespace(kernels, field, False)}"
        return name

    def _launch_call(self, launch: Any, kernels: tuple[Any, ...], field: str, args: str, wrap: bool, launch_expr: str) -> str:
        """The source of one call of a launcher with its kernels (wrapped with wrap_triton where `wrap`, in the call,
        as a triton_op's body wraps them; else the namespace built once, outside what the compilers trace)."""
        if takes_namespace(launch):
            if wrap:
                return f"{launch_expr}({self._namespace(kernels, field, wrap)}, {args})"
            return f"{launch_expr}({self._plain_namespace(kernels, field)}, {args})"
        if not wrap:
            return f"{launch_expr}({args})"
        # A launcher that calls its kernels as module globals: a copy of it, and of the functions it calls, reading
        # the wrapped kernels where they read the kernels, as the chart's triton_op calls it (harness.authoring.launcher).
        if not self.has_rebinding:
            self.has_rebinding = True
            self.source.add(rebinding_source())
        bound = ", ".join(f"id({ref}): wrap_triton({ref})" for ref in (self.names.kernel(kernels, i, field) for i in range(len(kernels))))
        return f"rebound({launch_expr}, {{{bound}}})({args})"

    def forward_call(self, wrap: bool = False) -> str:
        return self._launch_call(self.case.launch, self.case.kernels, "kernels", self.args, wrap,
                                 self.names.of(self.case.launch, "case.launch"))

    def backward_call(self, wrap: bool = False) -> str:
        backward = self.case.backward
        assert backward is not None
        launch_expr = self.names.of(backward.launch, "case.backward.launch")
        args = self.takes
        if not backward.kernels:
            return f"{launch_expr}(None, {args})" if takes_namespace(backward.launch) else f"{launch_expr}({args})"
        return self._launch_call(backward.launch, backward.kernels, "backward.kernels", args, wrap, launch_expr)

    def write(self) -> None:
        """The style's definitions, and `program`, the function of the case's inputs the path runs; the kernel namespaces its
        plain calls use go before them."""
        at = len(self.source.sections)
        self._definitions()
        if self.namespaces:
            self.source.sections.insert(at, "\n".join(self.namespaces.values()))

    def _definitions(self) -> None:
        from harness.execution.wrapping import call_returning_outputs

        style, case = self.style, self.case
        if style not in (Wrapping.CONTROL, Wrapping.SHIPPED):
            self.source.add(f"def launch({self.args}):\n    return {self.forward_call()}")
        if style is Wrapping.CONTROL:
            callee = self.names.of(case.reference, "case.reference")
        elif style is Wrapping.SHIPPED:
            callee = "case.shipped"
        elif style is Wrapping.RAW:
            callee = "launch"
        elif style is Wrapping.RAW_AUTOGRAD:
            callee = self._function()
        else:
            callee = self._operator()
        call = f"{callee}({self.args})"
        all_results = style in (Wrapping.CONTROL, Wrapping.RAW, *OPERATOR_STYLES)  # what gives every result of a tuple-returning launcher
        self.source.add(f'''
def program({self.args}):
    """What the path runs: the wrapped kernel called as a model calls it."""
    {call_returning_outputs(case, call) if all_results else "return " + call}''')

    def _function(self) -> str:
        """The chart's own autograd.Function (wrapping.function_source), its free names bound as the chart binds them."""
        from harness.execution import wrapping

        case = self.case
        if case.backward:
            backward = f"def backward_of({self.takes}):\n    return {self.backward_call()}"
        else:
            backward = f"def backward_of(*args):\n    raise NotImplementedError({wrapping.no_backward_message(case)!r})"
        self.source.add(f"launcher = {self.names.of(case.launch, 'case.launch')}\n\n\n{backward}")
        self.source.add(embedded(wrapping._as_tuple, wrapping._input_grads))
        self.source.add(wrapping.function_source(case))
        return f"{wrapping.function_name(case)}.apply"

    def _operator(self) -> str:
        """The operator as the chart registers it (wrapping._register_operator): its body, fake, CPU kernel, autograd
        (wherever the case has a backward, on every row) and flop formula."""
        case, style = self.case, self.style
        cpu_fallback = self.row is Row.CPU_FALLBACK
        name = f"{case.name}_{style.value}" + ("_cpu_fallback" if cpu_fallback else "")
        self._operator_body(name, case.launch, case.kernels, "kernels", "case.signature", tuple(sorted(case.mutates)))
        if style is Wrapping.CUSTOM_OP:
            self.source.add(f"def _fake(*inputs):\n    return case.reference(*inputs)\n\n\n"
                            f"_fake.__signature__ = case.signature\n{name}.register_fake(_fake)")
        if case.backward is not None:
            self._autograd(name)
        if case.flops is not None and not cpu_fallback:
            self.source.add(f'''
from torch.utils.flop_counter import register_flop_formula


@register_flop_formula(torch.ops.{OP_NAMESPACE}.{name})
def _(*shapes, out_shape=None, **kwargs):
    return case.flops(*shapes)''')
        if cpu_fallback:
            self.source.add(f"def _on_cpu(*inputs):\n    return case.reference(*inputs)\n\n\n"
                            f"_on_cpu.__signature__ = case.signature\n{name}.register_kernel(\"cpu\")(_on_cpu)")
        return f"torch.ops.{OP_NAMESPACE}.{name}"

    def _operator_body(self, name: str, launch: Any, kernels: tuple[Any, ...], field: str, signature: str,
                       mutates: tuple[str, ...]) -> None:
        """The chart's own body (wrapping.operator_body_source), run as the chart runs it, in a module of its own
        (wrapping._generated_module), its free names bound as the chart binds them; then registered."""
        from harness.execution import wrapping

        if not self.generated:
            self.generated = True
            self.source.imports |= {"linecache", "types"}
            self.source.add(embedded(wrapping.run_as_module, wrapping._generated_module))
        bound = {"wrap_triton": "torch.library.wrap_triton", "_tcm_launch": self.names.of(launch, f"case.{field.replace('kernels', 'launch')}")}
        if takes_namespace(launch):
            bound["_tcm_k"] = self._plain_namespace(kernels, field)
            if not self.namespace_maker:
                self.namespace_maker = True
                self.source.add(embedded(wrapping.launcher_namespace))
            bound["_tcm_namespace"] = "launcher_namespace"
        else:
            if not self.has_rebinding:
                self.has_rebinding = True
                self.source.add(rebinding_source())
            bound["_tcm_rebound"] = "rebound"
        bound.update({kernel_name(k): self.names.kernel(kernels, i, field) for i, k in enumerate(kernels)})
        source = wrapping.operator_body_source(name, self.style, launch, kernels).strip("\n")
        title = wrapping.operator_body_title(name, self.style)
        self.source.add(f'{name} = _generated_module({name!r}, """\n{source}\n""", {title!r},\n    '
                        + ", ".join(f"{k}={v}" for k, v in bound.items()) + f")[{name!r}]\n"
                        f"{name}.__signature__ = {signature}\n"
                        f'{name} = torch.library.{self.style.value}("{OP_NAMESPACE}::{name}", {name}, mutates_args={mutates!r})')

    def _autograd(self, name: str) -> None:
        from harness.execution import wrapping

        case, style = self.case, self.style
        assert case.backward is not None
        backward = self.backward_call()
        if case.backward.kernels:  # the backward's kernels get their own operator of the same style
            back_name = f"{case.name}_backward_{style.value}"
            self._operator_body(back_name, case.backward.launch, case.backward.kernels, "backward.kernels", "case.backward_signature", ())
            if style is Wrapping.CUSTOM_OP:
                self.source.add(embedded(wrapping.backward_fake))
                self.source.add(f"def _backward_fake(*args):\n    return backward_fake({wrapping.fake_gradient_positions(case)!r}, *args)\n\n\n"
                                f"_backward_fake.__signature__ = case.backward_signature\n{back_name}.register_fake(_backward_fake)")
            backward = f"torch.ops.{OP_NAMESPACE}.{back_name}({self.takes})"
        # The chart's own registration (wrapping.operator_autograd_source), its free names bound as the chart binds them.
        self.source.add(f"def backward_of({self.takes}):\n    return {backward}")
        self.source.add(embedded(wrapping._as_tuple, wrapping._input_grads, wrapping.operator_autograd_source(case).strip("\n")))
        self.source.add(f"{name}.register_autograd(backward, setup_context=setup_context)")

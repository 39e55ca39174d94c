"""A row's path written out as source: the path modules its cell ran, printed as they are, and the calls to them.

The calls build the cell's artifact from the style (harness.execution.paths), run it on the examples and compare what it
gives with the reference's."""

from __future__ import annotations

import torch

from harness.authoring.case import Case, Example, dtype_name
from harness.execution import paths
from harness.execution.paths import serving
from harness.execution.source_text import Source
from harness.model.columns import OP_NAMESPACE, Wrapping
from harness.model.rows import Kind, Row
from harness.processes import runner_template


def _replay(examples: list[Example], path: str) -> list[str]:
    """The inputs the cell checked before its smallest failing one, run in the same order: what the path compiled and
    cached for each (a recompile, a cache entry) can decide what it does with the next."""
    if not examples:
        return []
    rows = ",\n".join(f"    (torch.{dtype_name(e.dtype)}, {e.shape!r}, {e.seed}, {dict(e.scalars)!r}, {tuple(sorted(e.absent))!r})"
                       for e in examples)
    settings = [f"if hasattr(torch._dynamo.config, {name!r}):\n    torch._dynamo.config.{name} = {value!r}"
                for name, value in runner_template.DYNAMO_FOR_MANY_EXAMPLES.items()]
    return ["# The inputs the cell checked, in the order it checked them, before its smallest failing one; Dynamo set as the",
            "# cell's process was for so many calls of one compiled function (past its default recompile limit of 8 it",
            "# would run the rest eagerly, or, with fullgraph=True, fail).",
            *settings, f"RAN = [\n{rows},\n]", "for dtype, shape, seed, scalars, absent in RAN:",
            f"    run(make_inputs(dtype, shape, seed, scalars, absent), {path})"]


class PathWriter:
    """Writes the cell's path into `source`, after its style."""

    def __init__(self, case: Case, style: Wrapping, row: Row, source: Source):
        self.case, self.style, self.row, self.source = case, style, row, source
        self.params = [p.name for p in case.input_parameters()]

    def write(self, traced: Example, example: Example, replayed: list[Example]) -> None:
        """The path built on `traced` and run on `example` (after `replayed`, on a row that compiles per call), checked
        against the reference, and the file's last line."""
        row, spec, case = self.row, self.row.spec, self.case
        tol = case.tolerance(example.dtype)
        lines = [f"# The example the path is built with, and the smallest failing one: {traced}; {example}.",
                 f"traced = make_inputs(torch.{dtype_name(traced.dtype)}, {traced.shape!r}, {traced.seed})",
                 f"inputs = make_inputs(torch.{dtype_name(example.dtype)}, {example.shape!r}, {example.seed}, "
                 f"{dict(example.scalars)!r}, {tuple(sorted(example.absent))!r})",
                 f"ATOL, RTOL = {tol.atol!r}, {tol.rtol!r}"]
        dtypes = list(dict.fromkeys(e.dtype for e in [traced, *replayed, example]))
        if self.style is not Wrapping.CONTROL and row is not Row.CPU_FALLBACK:
            plain = "case.shipped" if self.style is Wrapping.SHIPPED else "launch"
            lines += ["# As the chart does before a cell: the launcher once in plain eager on each dtype's example (Triton "
                      "compiles the kernel here).",
                      'with stage("run"):', f"    for dtype in [{', '.join(f'torch.{dtype_name(d)}' for d in dtypes)}]:",
                      f"        {plain}(*make_inputs(dtype, {case.example_shape!r}, 0))"]
        kind = spec.kind
        for source in paths.printed(tuple(m for m in paths.of(row) if m is not serving)):  # the cell's own path, as it ran
            self.source.add(source)
        names = "[f'output {n}' for n in range(count)]"
        reference = "case.reference_outputs"
        compared_inputs = True  # the inputs after the call are compared too: a mutation must happen, and only where declared
        if kind is Kind.TRAIN:
            self._train_step()
            graded = [n for n, p in zip(self.params, case.input_parameters())
                      if (p.annotation is torch.Tensor or n in case.optional_inputs) and p.name not in case.no_grad]
            gradients = [f"gradient of input {n!r}" for n in graded]
            names = f"[f'output {{n}}' for n in range(count - {len(gradients)})] + {gradients!r}"
            reference, compared_inputs = "step(case.reference_outputs, NO_GRAD)", False
        if kind is Kind.EAGER or (kind is Kind.SUBSYSTEM and row is Row.CPU_FALLBACK):
            lines += ["artifact = program"]
        elif kind in (Kind.COMPILE, Kind.WARM_CACHE, Kind.TRAIN):
            if spec.compile_options is None:  # training without a compiler
                lines += ["artifact = step(program, NO_GRAD)"]
            else:
                if kind is Kind.WARM_CACHE:
                    lines.insert(0, "# The chart compiled this once, then again in a new process on the warm caches after editing "
                                    "the kernel; this file makes the first compile, where the cell failed or its failure begins.")
                lines += self._compiled_per_dtype(kind, traced)
        elif kind in (Kind.EXPORT, Kind.AOTI, Kind.AOTI_CPP, Kind.AOTI_FRESH):
            lines += self._export(kind)
        elif kind in (Kind.EXPORT_LOAD, Kind.CACHE_ARTIFACTS, Kind.PRECOMPILE):
            lines[:0] = self._served(kind)  # before anything is run: the new process this file is started as takes this branch
            lines += self._saved(kind, traced)
        elif kind is Kind.SUBSYSTEM:
            reference, names = self._subsystem(lines)
            compared_inputs = row not in (Row.FLOP_COUNTER, Row.OPCHECK)
        else:
            raise NotImplementedError(f"no reproducer for rows of kind {kind}: harness.execution.reproducer writes each kind's path")

        lines += self._checked(example, replayed, reference, names, compared_inputs)
        lines += ['print("\\nPASSED: the path ran and matched the reference")']
        self.source.add("\n".join(lines))

    def _checked(self, example: Example, replayed: list[Example], reference: str, names: str, compared_inputs: bool) -> list[str]:
        """`run`, which calls the path and compares what it gives with the reference's (and the inputs after the call,
        where `compared_inputs`), then its calls: the inputs replayed, the smallest failing one, a CUDA graph's replays."""
        spec = self.row.spec

        def path(dtype: str) -> str:  # the artifact a call of this dtype runs
            return f"artifact_of({dtype})" if self._per_dtype() else "artifact"

        after = " + [x for x in after if isinstance(x, torch.Tensor)]" if compared_inputs else ""
        before = " + [x for x in expected_inputs if isinstance(x, torch.Tensor)]" if compared_inputs else ""
        lines = [
            "",
            "",
            "def run(values, path):",
            "    expected_inputs, after = clone(values), clone(values)",
            f"    reference_outputs = flatten(({reference})(*expected_inputs))",
            "    count = len(reference_outputs)",
            f"    names = {names} + [f'input {{n}} after the call' for n in range(len(values))]",
            '    with stage("run", called=True):',
            f"        actual = flatten(path(*after)){after}",
            '    with stage("run"):',
            f"        check(actual, reference_outputs{before}, names, ATOL, RTOL)",
            "",
            "",
            *_replay(replayed, path("dtype")),
            f"run(inputs, {path(f'torch.{dtype_name(example.dtype)}')})",
        ]
        if spec.replays:
            lines += [f"for replay in range(1, {spec.replays + 1}):  # new values in the same input buffers, as a CUDA graph replays",
                      f"    fresh = make_inputs(torch.{dtype_name(example.dtype)}, {example.shape!r}, replay)",
                      "    for buffer, value in zip(inputs, fresh):",
                      "        if isinstance(buffer, torch.Tensor):",
                      "            buffer.copy_(value)",
                      f"    run(inputs, {path(f'torch.{dtype_name(example.dtype)}')})"]
        return lines

    def _per_dtype(self) -> bool:
        """Whether the path is torch.compile, which the chart builds anew for each dtype (Execution.artifact)."""
        return self.row.spec.kind in (Kind.COMPILE, Kind.WARM_CACHE, Kind.TRAIN) and self.row.spec.compile_options is not None

    def _compiled_per_dtype(self, kind: Kind, traced: Example) -> list[str]:
        """torch.compile of the program made anew for each dtype on its first call and called once on that dtype's
        example (seed 0 at example_shape), as the chart builds it (builders.compiled); in training, the forward alone,
        on inputs that require grad. Two compiled functions of one program share Dynamo's and Inductor's caches."""
        spec = self.row.spec
        first = (f"leaves(make_inputs(dtype, {self.case.example_shape!r}, 0), NO_GRAD)" if kind is Kind.TRAIN
                 else f"make_inputs(dtype, {self.case.example_shape!r}, 0)")
        settings = dict(spec.dynamo_config) if spec.dynamo_config else None
        options_dict = ", ".join(f"{k!r}: {v!r}" for k, v in (spec.compile_options or {}).items())
        return ["", "",
                "def build(dtype):",
                f"    called = compiled(program, {{{options_dict}}}, settings={settings!r}, marked_unbacked={bool(spec.unbacked)}, "
                f"batched={self.case.batched!r}, inference_mode={bool(spec.inference_mode)})",
                '    with stage("compile", called=True):',
                f"        called(*{first})",
                "    return step(called, NO_GRAD)" if kind is Kind.TRAIN else "    return called",
                "",
                "",
                "ARTIFACTS = {}",
                "",
                "",
                "def artifact_of(dtype):",
                "    if dtype not in ARTIFACTS:",
                "        ARTIFACTS[dtype] = build(dtype)",
                "    return ARTIFACTS[dtype]",
                "",
                "",
                f"artifact_of(torch.{dtype_name(traced.dtype)})"]

    def _served(self, kind: Kind) -> list[str]:
        """The branch this file takes when it is started again as the new process that loads what was saved
        (harness.execution.saved): the case and its style are defined above, as there; then the saved file is loaded
        by the row's path (harness.execution.paths.saving) and called once."""
        load = {Kind.EXPORT_LOAD: "load_program", Kind.CACHE_ARTIFACTS: "load_caches", Kind.PRECOMPILE: "load_precompiled"}[kind]
        return ['if sys.argv[1:2] == ["--load"]:  # the new process that loads what was saved (see `artifact` below)',
                "    saved_file, inputs_file, outputs_file = sys.argv[2:5]",
                '    with stage("load"):',
                f"        loaded = {load}(saved_file, program, {dict(self.row.spec.compile_options or {})!r})",
                "    values = [received(x, DEVICE) for x in torch.load(inputs_file, weights_only=False)]",
                '    with stage("compile", called=True):' if kind is Kind.CACHE_ARTIFACTS else '    with stage("run"):',
                "        out = loaded(*values)",
                "    torch.save((out, values), outputs_file)",
                "    sys.exit(0)",
                ""]

    def _saved(self, kind: Kind, traced: Example) -> list[str]:
        """The path saved here, and `artifact`: each call starts this file again as the new process that loads it."""
        self.source.imports.update({"os", "subprocess", "tempfile"})
        spec = self.row.spec
        options = dict(spec.compile_options or {})
        lines = ["folder = tempfile.mkdtemp()"]
        if kind is Kind.EXPORT_LOAD:
            lines = self._export(Kind.EXPORT)[:-1] + lines + ["SAVED = os.path.join(folder, 'program.pt2')",
                                                             "save_program(exported, SAVED, stage=stage)"]
        elif kind is Kind.CACHE_ARTIFACTS:
            lines += [f"compiled_here = compiled(program, {options!r})", 'with stage("compile", called=True):', "    compiled_here(*traced)",
                      "SAVED = os.path.join(folder, 'cache-artifacts')", "save_caches(SAVED, stage=stage)"]
        else:
            lines += ["SAVED = os.path.join(folder, 'precompiled')",
                      f"precompile(program, {options!r}, {dict(spec.dynamo_config or {})!r}, traced, SAVED, stage=stage)"]
        caches = kind is Kind.CACHE_ARTIFACTS
        return lines + [
            "",
            "",
            "def artifact(*values):",
            f"    # as the chart does: a new process{', its compile caches empty (the artifacts are all it has),' if caches else ''} "
            "that imports the case, builds the style and loads the saved file",
            "    call_folder = tempfile.mkdtemp()",
            "    inputs_file, outputs_file = os.path.join(call_folder, 'inputs.pt'), os.path.join(call_folder, 'outputs.pt')",
            "    torch.save([sent(x) for x in values], inputs_file)  # a view stays a view of its base",
            "    env = {**os.environ, 'TORCHINDUCTOR_CACHE_DIR': os.path.join(call_folder, 'inductor'), "
            "'TRITON_CACHE_DIR': os.path.join(call_folder, 'triton')}" if caches else "    env = None",
            "    done = subprocess.run([sys.executable, __file__, '--load', SAVED, inputs_file, outputs_file], capture_output=True, "
            "text=True, env=env)",
            "    if done.returncode != 0:",
            "        print(done.stderr, file=sys.stderr)",
            "        print(done.stdout)",
            "        sys.exit(done.returncode)",
            "    out, after = torch.load(outputs_file, weights_only=False)",
            "    for value, written in zip(values, after):",
            "        if isinstance(value, torch.Tensor):",
            "            value.copy_(written)",
            "    return out",
        ]

    def _export(self, kind: Kind) -> list[str]:
        case, spec = self.case, self.row.spec
        self.source.imports.update({"os", "tempfile"})
        lines = [f"exported = export(program, traced, strict={bool(spec.strict)}, max_batch={case.max_batch}, "
                 f"batched={case.batched!r}, dims={dict(case.dynamic_dims)!r}, min_batch={case.min_batch}, stage=stage)"]
        if kind is Kind.EXPORT:
            return lines + ["artifact = exported.module()"]
        lines += [f'package_path = package(exported, os.path.join(tempfile.mkdtemp(), "{case.name}.pt2"), stage=stage)']
        if kind is Kind.AOTI:
            return lines + ["artifact = load(package_path, stage=stage)"]
        self.source.imports.add("subprocess")
        # The new process: this file again, taking its serving branch (paths.serving's main) before anything but torch
        # is imported, so that the case's module and its operators are not there.
        self.source.served = "\n\n\n".join(paths.printed((serving,)) + [
            'if sys.argv[1:2] == ["--serve"]:  # the new process that serves the package (see `artifact` below)',
            "    sys.exit(main(sys.argv[2]))"])
        where = ("from C++ (AOTIModelPackageLoader, no Python); this file loads it with the same loader in a new Python "
                 "process that imports torch only" if kind is Kind.AOTI_CPP else "in a new Python process that imports torch only")
        return lines + [
            f"# The chart ran the package {where}, as a serving process loads it.",
            "server = subprocess.Popen([sys.executable, __file__, '--serve', DEVICE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)",
            "",
            "",
            "class ServeFailed(Exception):",
            '    """What the serving process answered instead of what was asked."""',
            "",
            "",
            "def asked(line, expected):",
            "    if line is not None:",
            "        server.stdin.write(line + '\\n')",
            "        server.stdin.flush()",
            "    answer = server.stdout.readline().strip() or f'error the serving process died (exit status {server.wait()})'",
            "    if answer != expected:",
            "        raise ServeFailed(answer.removeprefix('error ').replace('\\\\n', '\\n'))",
            "",
            "",
            'with stage("aot_load"):',
            "    asked(None, 'ready')",
            "    asked(f'load 0 {package_path}', 'loaded')",
            "",
            "",
            "def artifact(*values):",
            "    folder = tempfile.mkdtemp()",
            "    inputs_file, outputs_file = os.path.join(folder, 'in.pt'), os.path.join(folder, 'out.pt')",
            "    torch.save(sent_tensors(values), inputs_file)",
            "    asked(f'0 {inputs_file} {outputs_file}', 'ok')",
            "    outputs, after = torch.load(outputs_file, weights_only=False)",
            "    return as_returned(values, outputs, after, DEVICE)",
        ]

    def _train_step(self) -> None:
        # the inputs that take no gradient (the case's no_grad), by position, as the chart passes them to leaves and step
        self.source.add(f"NO_GRAD = {self.case.no_grad_positions!r}")

    def _subsystem(self, lines: list[str]) -> tuple[str, str]:
        """The row's program (`artifact`, made by its path: harness.execution.paths.subsystems) added to `lines`; returns
        its reference and its outputs' names (source)."""
        row, case = self.row, self.case
        if row is Row.OPCHECK:
            # The operator the chart checks: the library's own as the case names it, or the one the style registers.
            op = "case.shipped" if self.style is Wrapping.SHIPPED else f"torch.ops.{OP_NAMESPACE}.{case.name}_{self.style.value}.default"
            lines += [f"artifact = opchecked({op})"]
            return "lambda *values: []", "[]"
        if row is Row.FLOP_COUNTER:
            lines += ["artifact = flops_counted(program)"]
            return "flops_expected(case.reference, case.flops)", "['the flop count']"
        if row is Row.TENSOR_SUBCLASS:
            lines += [f"artifact = on_two_tensors(program, {bool(case.mutates)!r})"]
            return "on_halves(case.reference_outputs)", "[f'the result\\'s .{part}' for part in 'ab' for _ in range(count // 2)]"
        raise ValueError(f"{row} is not a subsystem row with a program of its own")

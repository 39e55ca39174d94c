"""Why a cell fails: the upstream issues and documented limits that the charts' failures come from, as data.

One `KnownIssue` entry holds every fact of one upstream issue, pull request or documented limit, as an
OpInfo entry does for an operator: its link and title, its status, the versions it affects and the one
that fixed it, the styles and rows it concerns, the signature that recognises a failing cell (stage and
first line of the error), a one-line workaround, and the day it was last checked upstream.

A cell is matched on what it recorded (outcome, stage, error kind, first line), never on its case's
name: the signatures hold for any user's kernel. A failing cell that matches no entry is news (a new
failure, or a known one whose text changed); a cell matching an entry marked fixed in a version it ran on
or after is a regression. The entries in ENTRIES are the ones the committed charts' failures were traced
to (each entry's link, status and `checked` day say what was read upstream, and when); adding one is one entry here.

This module imports no torch: reports and diffs read it too.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Iterable

from harness.model.columns import Wrapping
from harness.model.fingerprint import Fingerprint
from harness.model.outcome import CellResult, Outcome, Stage

# The outcomes a known issue explains: a finding about the path (not the case's or the harness's error,
# not a skip, not a pass).
EXPLAINED = (Outcome.FAIL, Outcome.WRONG, Outcome.CRASH, Outcome.TIMEOUT)


class Status(str, enum.Enum):
    OPEN = "open"
    FIX_PROPOSED = "fix proposed"  # a pull request not merged yet
    FIXED = "fixed"  # fixed upstream; `fixed_in` names the first release with the fix
    NOT_REPRODUCIBLE = "closed, no longer reproduces"
    BY_DESIGN = "by design"  # documented behaviour: the workaround is the way
    UNTRACKED = "no upstream issue found"  # the cause is read in the source (the link); nobody has reported it yet


@dataclass(frozen=True, eq=False)
class KnownIssue:
    key: str  # "pytorch#146066": the tracker and number, or a short name for a documented limit
    link: str
    title: str  # as upstream titles it
    status: Status
    affects: str  # the versions it was seen on, in words ("torch 2.6 to 2.13")
    workaround: str  # one line a user can act on
    checked: str  # the day the upstream status was last read (YYYY-MM-DD)
    stages: frozenset[Stage]  # where the cell fails
    message: str  # a regular expression searched in the error's first line (the WRONG cells' mismatch text)
    outcomes: frozenset[Outcome] = frozenset({Outcome.FAIL})
    styles: frozenset[Wrapping] = frozenset()  # empty: any style
    rows: frozenset[str] = frozenset()  # row names (harness.model.rows.Row values); empty: any row
    error_type: str | None = None  # a regular expression the recorded error kind must match fully
    detail: str | None = None  # a regular expression searched in the whole message, where the first line is not enough
    warning: str | None = None  # a regular expression one of the warnings PyTorch logged during the cell must hold
    interpreter: bool | None = None  # True: only on Triton's interpreter; False: only on a GPU; None: either
    fixed_in: str | None = None  # "torch 2.13": the first release with the fix, where one was released
    related: tuple[str, ...] = ()  # further links (the pull request that caused it, a proposed fix)

    def __post_init__(self) -> None:
        """An entry must hold every fact a user and the matcher need: a gap is caught when the table is read."""
        problems = [what for what, missing in (
            ("a key", not self.key),
            ("a link", not self.link.startswith("https://")),
            ("a title", not self.title),
            ("a workaround", not self.workaround),
            ("the day it was checked (YYYY-MM-DD)", not re.fullmatch(r"\d{4}-\d\d-\d\d", self.checked)),
            ("a stage", not self.stages),
            ("a message pattern", not self.message),
            ("a release it was fixed in, as 'torch X.Y' or 'triton X.Y'",
             self.fixed_in is not None and _parse_release(self.fixed_in) is None),
            ("fixed_in only with the status fixed", (self.fixed_in is not None) != (self.status is Status.FIXED)),
        ) if missing]
        if problems:
            raise TypeError(f"known issue {self.key!r} lacks {', '.join(problems)}")
        for pattern in (self.message, self.detail, self.warning, self.error_type):
            re.compile(pattern or "")

    def matches(self, cell: CellResult, interpreter: bool) -> bool:
        if cell.outcome not in self.outcomes or cell.stage not in self.stages:
            return False
        if self.styles and cell.wrapping not in self.styles:
            return False
        if self.rows and cell.row.value not in self.rows:
            return False
        if self.interpreter is not None and self.interpreter != interpreter:
            return False
        if self.error_type is not None and not re.fullmatch(self.error_type, cell.error_type or ""):
            return False
        if self.detail is not None and not re.search(self.detail, cell.detail or ""):
            return False
        if self.warning is not None and not any(re.search(self.warning, w) for w in cell.warnings):
            return False
        return re.search(self.message, _matched_text(cell)) is not None

    def fixed_before(self, fingerprint: Fingerprint) -> str | None:
        """The release that fixed it, where the run's version of that package is that release or later."""
        if self.fixed_in is None:
            return None
        package, release = _parse_release(self.fixed_in)  # type: ignore[misc]
        ran = _version(getattr(fingerprint, package, None))
        return self.fixed_in if ran is not None and ran >= release else None


def _matched_text(cell: CellResult) -> str:
    text = cell.message or ""
    if cell.outcome is Outcome.WRONG and cell.mismatched:
        text += f" ({cell.mismatched})"
    return text


def _version(text: str | None) -> tuple[int, ...] | None:
    """"2.11.0+cu130" -> (2, 11, 0); a pre-release (2.13.0a0, 2.13.0.dev2026) counts as its release."""
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(part or 0) for part in found.groups()) if found else None


def _parse_release(text: str) -> tuple[str, tuple[int, ...]] | None:
    found = re.fullmatch(r"(torch|triton) (\d+\.\d+(?:\.\d+)?)", text)
    if not found:
        return None
    return found.group(1), _version(found.group(2))  # type: ignore[return-value]


def _stages(*names: str) -> frozenset[Stage]:
    return frozenset(Stage(name) for name in names)


_NONSTRICT_ROWS = frozenset({"export_nonstrict", "aoti_nonstrict", "aoti_cpp_nonstrict", "aoti_fresh_nonstrict", "export_load_fresh"})
# The styles that launch a kernel themselves: raw, raw in an autograd.Function, and a library's op as it ships (a plain
# launcher or its own autograd.Function, which meets the same failures; a shipped operator's differ in their text).
_RAW = frozenset({Wrapping.RAW, Wrapping.RAW_AUTOGRAD, Wrapping.SHIPPED})
_CHECKED = "2026-11-24"

_TUTORIAL = "https://pytorch.org/tutorials/recipes/torch_compile_user_defined_triton_kernel_tutorial.html"

ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        key="pytorch/pytorch#146066",
        link="https://github.com/pytorch/pytorch/issues/146066",
        title="Failed to export user-defined Triton kernel when using strict=False",
        status=Status.OPEN,
        affects="every torch with non-strict export (2.5 on; measured 2.8 to 2.15)",
        workaround="wrap the kernel in torch.library.triton_op and launch it as wrap_triton(kernel)[grid](...), or export with strict=True",
        checked=_CHECKED,
        stages=_stages("export"),
        styles=_RAW,
        rows=_NONSTRICT_ROWS,
        # The autotuner hashes its key (a size) before any pointer is read: the same kernel invisible to the trace.
        message=r"Cannot access data pointer of Tensor|unhashable type: non-nested SymInt",
        related=("https://github.com/pytorch/pytorch/pull/185827", "https://github.com/pytorch/pytorch/issues/151015"),
    ),
    KnownIssue(
        key="pytorch/pytorch#180834",
        link="https://github.com/pytorch/pytorch/issues/180834",
        title="[Dynamo] GetAttrVariable(AutogradFunctionVariable(), setup_context) has no type when compiling custom autograd.Function",
        status=Status.FIXED,
        fixed_in="torch 2.13",
        affects="torch 2.11 and 2.12, where the traced code reads the Function's apply from an attribute; closed upstream on "
                "2026-04-30 as no longer reproducing on 2.13.0a0 (likely fixed by #166788 or #179974)",
        workaround="upgrade to torch 2.13, or call Fn.apply(...) from a plain function, or use triton_op with register_autograd",
        checked="2026-11-26",
        stages=_stages("compile", "export"),
        styles=frozenset({Wrapping.RAW_AUTOGRAD}),
        message=r"GetAttrVariable\(AutogradFunctionVariable\(\), setup_context\) has no type",
        related=("https://github.com/pytorch/pytorch/pull/166788", "https://github.com/pytorch/pytorch/pull/179974",
                 "https://github.com/pytorch/pytorch/pull/185316"),
    ),
    KnownIssue(
        key="pytorch/pytorch#145394",
        link="https://github.com/pytorch/pytorch/issues/145394",
        title="[EXPORT AOTI] `aoti_compile_and_package` custom_ops dependecies",
        status=Status.BY_DESIGN,
        affects="every torch with AOTInductor packages (the message names custom_op from torch 2.13)",
        workaround="import the module that registers the op before loading the package; from C++ with no Python, use triton_op "
                   "(its kernel is compiled into the package) or a C++ TORCH_LIBRARY op",
        checked=_CHECKED,
        stages=_stages("aot_load", "run"),
        styles=frozenset({Wrapping.CUSTOM_OP, Wrapping.SHIPPED}),
        rows=frozenset({"aoti_cpp_strict", "aoti_cpp_nonstrict", "aoti_fresh_nonstrict"}),
        message=r"Could not find schema for \S+::\w+",
        related=("https://github.com/pytorch/pytorch/issues/134581", "https://github.com/pytorch/pytorch/pull/186305"),
    ),
    KnownIssue(
        key="pytorch/pytorch#190340",
        link="https://github.com/pytorch/pytorch/pull/190340",
        title="Match Triton Python float signatures for user-defined kernels",
        status=Status.FIX_PROPOSED,
        affects="torch with PR #170289 (Inductor passes a Python float to a user kernel as fp64; measured 2.11)",
        workaround="cast the float in the kernel (alpha.to(tl.float32)) before it meets fp32 values, or make it a tl.constexpr",
        checked=_CHECKED,
        stages=_stages("compile", "aot_compile"),
        message=r"at \d+:\d+:",
        detail=r"fp64",
        related=("https://github.com/pytorch/pytorch/pull/170289",),
    ),
    KnownIssue(
        key="pytorch/pytorch#177874",
        link="https://github.com/pytorch/pytorch/pull/177874",
        title="[Dynamo] Reuse tracked objects for Triton prune_configs_by",
        status=Status.FIX_PROPOSED,
        affects="torch 2.11 measured; the fix (for #177600) postdates 2.11, its release not verified",
        workaround="launch a prune_configs_by autotuner once per compiled region, drop prune_configs_by, or wrap the launch in "
                   "triton_op or custom_op",
        checked=_CHECKED,
        stages=_stages("compile", "export"),
        styles=_RAW,
        message=r"ListVariable\(length=\d+\) is already tracked for mutation",
        related=("https://github.com/pytorch/pytorch/issues/177600",),
    ),
    KnownIssue(
        key="pytorch/pytorch#193608",
        link="https://github.com/pytorch/pytorch/pull/193608",
        title="[GPU][AOTI] Support host TMA in C++ wrappers",
        status=Status.FIX_PROPOSED,
        affects="torch 2.11 measured (host-side TensorDescriptor arguments of a triton_op's kernel: the mutation analysis "
                "fails, the compiled graph loses the kernel's writes)",
        workaround="build the descriptor inside the kernel (tl.make_tensor_descriptor from raw pointers), or launch the raw "
                   "kernel under torch.compile, whose Dynamo path supports host TMA",
        checked=_CHECKED,
        stages=_stages("run"),
        outcomes=frozenset({Outcome.WRONG, Outcome.FAIL}),
        styles=frozenset({Wrapping.TRITON_OP}),
        message=r"NaN where the reference has a number|test_aot_dispatch_dynamic: Outputs of the operator are different",
        warning=r"exception in identify_mutated_tensors",
        related=("https://github.com/pytorch/pytorch/pull/155777",),
    ),
    KnownIssue(
        key="wrap_triton: jit and autotune only",
        link="https://github.com/pytorch/pytorch/blob/main/torch/_library/triton.py",
        title="wrap_triton accepts only @triton.jit and @triton.autotune kernels (a kernel with @triton.heuristics outermost is refused)",
        status=Status.UNTRACKED,
        affects="torch 2.6 to 2.15 (wrap_triton's isinstance check)",
        workaround="compute the heuristic's value in the launcher and pass it as a constexpr, dropping @triton.heuristics",
        checked=_CHECKED,
        stages=_stages("run", "compile", "export", "aot_compile"),
        styles=frozenset({Wrapping.TRITON_OP, Wrapping.SHIPPED}),
        message=r"wrap_triton only works on functions annotated with triton\.jit or triton\.autotune",
        related=("https://github.com/pytorch/pytorch/pull/142208", "https://github.com/pytorch/pytorch/pull/143519"),
    ),
    KnownIssue(
        key="user kernel's module globals left out",
        link="https://github.com/pytorch/pytorch/blob/main/torch/_inductor/codegen/wrapper.py",
        title="Inductor re-emits a user-defined kernel's source without a module it reads as a global (a library's "
              "`tle.program_id(0)`), so Triton's compile of the re-emitted kernel raises NameError",
        status=Status.UNTRACKED,
        affects="torch 2.11 measured; 2.13's user_defined_triton_kernel_transitive_closure_source_code still copies "
                "only jit functions, constexprs and triton's own symbols, no module",
        workaround="call the helper as a @triton.jit function imported by name (from lib import program_id), or keep "
                   "the launch out of the graph (custom_op)",
        checked="2026-11-26",
        stages=_stages("compile"),
        message=r"^CompilationError: at \d+:\d+:",
        error_type=r"torch\._inductor\.exc\.InductorError",
        detail=r"NameError\('\w+ is not defined'\)",
        related=("https://github.com/pytorch/pytorch/pull/196237", "https://github.com/pytorch/pytorch/pull/198050"),
    ),
    KnownIssue(
        key="size-dependent heuristics",
        # The upstream issue and its status as a review of the charts read them on 2026-11-26 (this workplace's copy of
        # the tracker holds no text of it); the source that makes the guard is the first related link.
        link="https://github.com/pytorch/pytorch/issues/137024",
        title="A @triton.heuristics or autotune value computed from a dynamic size makes Dynamo guard on that size",
        status=Status.OPEN,
        affects="torch 2.11 measured (Dynamo evaluates heuristics as constants, guarding on the sizes they read)",
        workaround="do not derive constexprs from dynamic sizes (always mask), or export with the Dim export suggests",
        checked=_CHECKED,
        stages=_stages("compile", "export"),
        styles=_RAW,
        rows=frozenset({"export_strict", "aoti_strict", "aoti_cpp_strict", "compile_unbacked", "compile_no_recompile"}),
        message=r"Constraints violated|Could not guard on data-dependent expression Eq\(Mod\(|^Recompiling function .* guard failed: .* % \d+\) == 0",
        detail=r"% \d+\) == 0|Mod\(u\d+, \d+\)",
        related=("https://github.com/pytorch/pytorch/blob/main/torch/_dynamo/variables/functions.py",
                 "https://github.com/pytorch/pytorch/issues/120198"),
    ),
    KnownIssue(
        key="TensorDescriptor and unbacked sizes",
        link="https://github.com/triton-lang/triton/blob/main/python/triton/tools/tensor_descriptor.py",
        title="Triton's host TensorDescriptor checks its sizes when built, a guard on an unbacked size under torch.compile",
        status=Status.UNTRACKED,
        affects="torch 2.11 with triton 3.6 measured",
        workaround="do not mark the sizes a descriptor takes unbacked, or build the descriptor inside the kernel (tl.make_tensor_descriptor)",
        checked=_CHECKED,
        stages=_stages("compile", "export"),
        message=r"Could not guard on data-dependent expression",
        detail=r"tensor_descriptor\.py",
    ),
    KnownIssue(
        key="interpreter: wrap_triton on fake tensors",
        link="https://github.com/pytorch/pytorch/pull/185597",
        title="Under TRITON_INTERPRET=1 wrap_triton hands back the interpreted kernel, which then runs on fake tensors when "
              "torch.compile, export or opcheck trace the triton_op",
        status=Status.UNTRACKED,
        affects="torch 2.13 and later on Triton's interpreter (before PR #185597 wrap_triton refused interpreted kernels)",
        workaround="on the interpreter, use custom_op with register_fake; on a GPU the triton_op is traced as usual",
        checked=_CHECKED,
        interpreter=True,
        stages=_stages("compile", "export", "run"),
        styles=frozenset({Wrapping.TRITON_OP, Wrapping.SHIPPED}),
        message=r"Cannot access data pointer of Tensor|Attempted to set the storage of a tensor on device \"meta\"",
        related=("https://github.com/pytorch/pytorch/issues/152868",),
    ),
    KnownIssue(
        key="interpreter: UntypedStorage.data_ptr under Dynamo",
        link="https://github.com/triton-lang/triton/blob/main/python/triton/runtime/interpreter.py",
        title="Dynamo cannot trace Triton's interpreter, which reads UntypedStorage.data_ptr of each argument",
        status=Status.UNTRACKED,
        affects="triton 3.9 with torch 2.13 on Triton's interpreter",
        workaround="on the interpreter, use custom_op with register_fake, or allow the graph break (fullgraph=False)",
        checked=_CHECKED,
        interpreter=True,
        stages=_stages("compile", "export"),
        styles=_RAW,
        message=r"data_ptr` of class `UntypedStorage`",
        related=("https://github.com/pytorch/pytorch/issues/136271",),
    ),
    KnownIssue(
        key="pytorch/pytorch#139658",
        link="https://github.com/pytorch/pytorch/pull/139658",
        title="[inductor] Error on unsupported autotuner configs (a triton.Config or Autotuner with pre_hook or post_hook)",
        status=Status.BY_DESIGN,
        affects="torch 2.6 to 2.11 measured: Dynamo refuses the hooks (they run code at each launch, which AOTInductor cannot)",
        workaround="do the hook's work in the launcher before the launch (out.zero_() for reset_to_zero-like hooks), or keep "
                   "the launch out of the graph (custom_op)",
        checked="2026-11-27",
        stages=_stages("compile", "export", "run"),
        message=r"pre_hook and post_hook are not supported|RuntimeError when making fake tensor call",
        detail=r"pre_hook and post_hook are not supported",
        related=("https://github.com/pytorch/pytorch/issues/139059", "https://github.com/pytorch/pytorch/pull/141040"),
    ),
    KnownIssue(
        key="pytorch/pytorch#177932",
        link="https://github.com/pytorch/pytorch/pull/177932",
        title="[dynamo] skip tracing triton/runtime: Triton's driver (triton.runtime.driver.active.get_current_target()) is "
              "not traced",
        status=Status.BY_DESIGN,
        affects="torch 2.11 measured: a launcher that asks Triton's active driver for its target breaks the graph there",
        workaround="read the target once outside the compiled region (at import) and keep it in a module constant, or ask "
                   "torch.cuda.get_device_capability(), which Dynamo traces",
        checked="2026-11-27",
        stages=_stages("compile", "export"),
        styles=_RAW,
        message=r"Attempted to inline function marked as skipped",
        detail=r"get_current_target",
        related=("https://github.com/ROCm/aiter/pull/2688",),
    ),
    KnownIssue(
        key="pytorch/pytorch#173553",
        link="https://github.com/pytorch/pytorch/pull/173553",
        title="[precompile] Serialize triton kernel side table for bundled AOT artifacts (a JITFunction holds an RLock, "
              "which pickle refuses)",
        status=Status.FIX_PROPOSED,
        affects="torch 2.11 measured: aot_compile of a graph that launches a raw Triton kernel, or holds a host "
                "TensorDescriptor, cannot be saved",
        workaround="precompile the kernel inside triton_op or custom_op, whose graph names the operator, not the kernel object",
        checked="2026-11-27",
        stages=_stages("compile", "save"),
        rows=frozenset({"precompile_fresh"}),
        message=r"cannot pickle '_thread\.RLock' object|Can't pickle local object",
        related=("https://github.com/pytorch/pytorch/pull/171423",),
    ),
    KnownIssue(
        key="aot_compile and float arguments",
        link="https://github.com/pytorch/pytorch/blob/main/torch/_dynamo/aot_compile.py",
        title="torch.compile(...).aot_compile raises Dynamo's internal TensorifyScalarRestartAnalysis on a program with a "
              "Python float argument (dynamic=True): the restart torch.compile does is not done",
        status=Status.UNTRACKED,
        affects="torch 2.11 and 2.13 measured",
        workaround="pass the float as a 0-d tensor, or precompile with dynamic=False",
        checked="2026-11-27",
        stages=_stages("compile"),
        rows=frozenset({"precompile_fresh"}),
        message=r"^$",
        error_type=r"torch\._dynamo\.exc\.TensorifyScalarRestartAnalysis",
    ),
    KnownIssue(
        key="a Triton launch resumed after a graph break under dynamic=True",
        link="https://github.com/pytorch/pytorch/blob/main/torch/_higher_order_ops/triton_kernel_wrap.py",
        title="A launch whose grid holds a size computed before a graph break inside its own argument list (a call Dynamo "
              "skips, such as Triton's get_current_target) fails to trace in the resumed frame under dynamic=True: "
              "call_triton_kernel asks a SymNodeVariable for its .value (InternalTorchDynamoError)",
        status=Status.UNTRACKED,
        affects="torch 2.11 measured (a plain script of the case fails the same way; dynamic=None and False pass)",
        workaround="compute the launch's arguments (num_warps from the device) before the launch statement, or keep the "
                   "call Dynamo skips out of the compiled region (pytorch/pytorch#177932's workaround)",
        checked="2026-11-27",
        stages=_stages("compile"),
        styles=_RAW,
        rows=frozenset({"compile_dynamic"}),
        message=r"'SymNodeVariable' object has no attribute 'value'",
        related=("https://github.com/pytorch/pytorch/issues/122768", "https://github.com/pytorch/pytorch/pull/177932"),
    ),
    KnownIssue(
        key="pytorch/pytorch#148052",
        link="https://github.com/pytorch/pytorch/issues/148052",
        title="[inductor][user triton] support on-device TMA / tensor descriptor API (global scratch passed as nullptr)",
        status=Status.OPEN,
        affects="torch 2.11 measured: an AOTInductor package whose kernel makes tensor descriptors in the kernel runs wrong "
                "in a fresh process, where no triton.set_allocator was called",
        workaround="call triton.set_allocator in the serving process before running the package, or make the descriptors on "
                   "the host",
        checked="2026-11-27",
        stages=_stages("run"),
        outcomes=frozenset({Outcome.WRONG}),
        styles=frozenset({Wrapping.TRITON_OP}),
        rows=frozenset({"aoti_fresh_nonstrict"}),
        message=r"NaN where the reference has a number",
        related=("https://github.com/pytorch/pytorch/pull/148051",),
    ),
    KnownIssue(
        key="docs: raw kernels have no autograd",
        link="https://docs.pytorch.org/tutorials/advanced/python_custom_ops.html",
        title="A raw Triton launch writes through pointers: autograd never sees it, its inputs get no gradient",
        status=Status.BY_DESIGN,
        affects="every torch",
        workaround="wrap the launch in a torch.autograd.Function with a backward, or use triton_op with register_autograd",
        checked=_CHECKED,
        stages=_stages("run"),
        outcomes=frozenset({Outcome.WRONG}),
        styles=frozenset({Wrapping.RAW}),
        message=r"missing \(None\) where the reference has one",
    ),
    KnownIssue(
        key="docs: raw kernels have no flop formula",
        link=_TUTORIAL,
        title="User-defined Triton kernels do not compose with FlopCounterMode unless an operator registers a formula",
        status=Status.BY_DESIGN,
        affects="every torch",
        workaround="use triton_op and torch.utils.flop_counter.register_flop_formula(torch.ops.ns.op)",
        checked=_CHECKED,
        stages=_stages("run"),
        outcomes=frozenset({Outcome.WRONG}),
        styles=_RAW,
        rows=frozenset({"flop_counter"}),
        message=r"^the flop count differs from the reference: 0 where",
        related=("https://github.com/pytorch/pytorch/pull/169876",),
    ),
    KnownIssue(
        key="docs: raw kernels have no CPU fallback",
        link=_TUTORIAL,
        title="User-defined Triton kernels do not get a CPU fallback: a raw launch on CPU tensors reaches the GPU kernel",
        status=Status.BY_DESIGN,
        affects="every torch",
        workaround="use triton_op or custom_op and register_kernel(\"cpu\") for the CPU implementation",
        checked=_CHECKED,
        stages=_stages("run"),
        styles=_RAW,
        rows=frozenset({"cpu_fallback"}),
        message=r"cannot be accessed from Triton \(cpu tensor\?\)|illegal memory access",
    ),
    KnownIssue(
        key="docs: raw kernels and tensor subclasses",
        link=_TUTORIAL,
        title="User-defined Triton kernels do not compose with tensor subclasses: a raw launch reads the wrapper's (empty) storage",
        status=Status.BY_DESIGN,
        affects="every torch",
        workaround="use triton_op, which dispatches through __torch_dispatch__, or unwrap the subclass before launching",
        checked=_CHECKED,
        stages=_stages("run"),
        styles=_RAW,
        rows=frozenset({"tensor_subclass"}),
        message=r"illegal memory access|invalid python storage|Expected a\.stride\(\) == b\.stride\(\)|"
                r"Pointer argument \(at \d+\) cannot be accessed from Triton",  # a view's wrapper: its storage offset makes a pointer
        related=("https://github.com/pytorch/pytorch/pull/174772", "https://github.com/pytorch/pytorch/issues/121412"),
    ),
)


def by_key() -> dict[str, KnownIssue]:
    return {entry.key: entry for entry in ENTRIES}


def match(cell: CellResult, interpreter: bool, entries: Iterable[KnownIssue] = ENTRIES) -> KnownIssue | None:
    """The first entry that explains the cell's failure; None for a cell it does not concern (a pass, a skip, a
    case's or harness's error, the environment's fault) or whose failure no entry knows."""
    if cell.outcome not in EXPLAINED or cell.blamed_on:
        return None
    return next((entry for entry in entries if entry.matches(cell, interpreter)), None)


def unexplained(cell: CellResult) -> bool:
    """A failure about the path that no known issue explains: the news in a chart."""
    return cell.outcome in EXPLAINED and not cell.blamed_on and cell.known_issue is None


def still_failing_though_fixed(cell: CellResult, fingerprint: Fingerprint) -> str | None:
    """The release a cell's known issue was fixed in, where the cell ran on it or later and still fails."""
    entry = by_key().get(cell.known_issue or "")
    return entry.fixed_before(fingerprint) if entry else None

"""Real upstream bug reports replayed against the chart: each issue, the cells that would surface it, and what the
GPU chart shows for them. `python docs/bug_replay.py [results.json]` rewrites the table in docs/bug-replay.md
(default: reports/gpu/results.json); tests/harness/test_bug_replay.py checks that the committed table is current.

One `Issue` entry holds every fact of one upstream issue, as an OpInfo entry does for an operator: its key (the
link follows from it), its title, the feature that triggers it, its upstream status, the chart's cells that run
that feature on the path the issue is about, and `symptom`, a regular expression for what such a cell shows when
the issue is there. Where no built-in case has the triggering feature, `cells` is empty and `gap` says what is
missing; where the nearest case lacks part of it, `cells` holds that case's cells and `gap` the part it lacks, so
a pass there is not read as a fix.

The issues are the ones traced to the user-kernel paths beyond harness/model/known_issues.py (no key of its ENTRIES
is repeated here). Statuses were read from the stored issue corpus on the day CHECKED says.
"""

import json
import os
import re
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_RESULTS = os.path.join("reports", "gpu", "results.json")
DOC = os.path.join(ROOT, "docs", "bug-replay.md")
BEGIN = "<!-- bug-replay: python docs/bug_replay.py -->"
END = "<!-- end bug-replay -->"
CHECKED = "2026-11-27"
MESSAGE_CHARS = 80  # of a failing cell's first line: enough to recognise the error in a table cell

WRONG = r"^wrong"  # the issue gives silently wrong numbers
BROKEN = r"^(fail|wrong|crash|timeout)"  # the issue breaks the path in any way
MUTATION_FALLBACK = r"identify_mutated_tensors"  # Inductor gave up on the kernel's mutation analysis (a warning)


@dataclass(frozen=True)
class Issue:
    key: str  # "pytorch/pytorch#139059"
    title: str  # as upstream titles it
    feature: str  # what the issue's code does that triggers it, and on which path
    status: str  # open / closed, and the fix (a pull request or release) where known; "unknown" where not
    cells: tuple[str, ...] = ()  # CASE-STYLE-ROW ids of the built-in plan that run the feature
    symptom: str = BROKEN  # searched in what a cell shows (plus its warnings): the issue surfacing there
    gap: str | None = None  # what no built-in case has (no cells), or what the nearest case lacks (cells)

    @property
    def link(self) -> str:
        repo, number = self.key.split("#")
        return f"https://github.com/{repo}/issues/{number}"


ISSUES: tuple[Issue, ...] = (
    Issue(
        key="pytorch/pytorch#139059",
        title="Triton pre_hooks are ignored by torch.compile",
        feature="autotune Config pre_hook zeroing an atomic_add output, under torch.compile",
        status="closed; PR #139658 turned the silent skip into an error, PR #141040 checks Autotuner hooks (before 2.11)",
        cells=("autotune_pre_hook-raw-compile_default", "autotune_pre_hook-raw-compile_fullgraph",
               "autotune_pre_hook-triton_op-compile_default"),
        symptom=WRONG,
    ),
    Issue(
        key="pytorch/pytorch#120802",
        title="Custom triton kernels with autotune running in torch.compile() don't seem to properly capture mutating inputs",
        feature="autotune reset_to_zero on an atomically accumulated output, under torch.compile",
        status="closed; PR #120938 banned reset_to_zero (2.3), PR #140982 supported it (~2.6)",
        cells=("histogram_atomic-raw-compile_default", "histogram_atomic-raw-compile_fullgraph",
               "histogram_atomic-triton_op-compile_fullgraph"),
        symptom=WRONG,
    ),
    Issue(
        key="pytorch/pytorch#138546",
        title="torch.compile silently treats None argument passed to Triton kernel as a `*i8`",
        feature="None for a tensor argument of an autotuned kernel, under torch.compile",
        status="closed; PR #138472 (~2.6)",
        cells=("autotune_optional_none-raw-compile_default", "autotune_optional_none-raw-compile_fullgraph",
               "autotune_optional_none-triton_op-compile_fullgraph"),
    ),
    Issue(
        key="pytorch/pytorch#115344",
        title="Inductor autotuning with None Tensors leads to cuda IMA with user-defined triton kernel",
        feature="None for a tensor argument of an autotuned kernel, autotuned by Inductor",
        status="closed; PR #138472 (after #138260 was reverted in #138469)",
        cells=("autotune_optional_none-raw-compile_default", "autotune_optional_none-raw_autograd-compile_default",
               "autotune_optional_none-raw-compile_max_autotune"),
        symptom=r"illegal memory access|^wrong",
    ),
    Issue(
        key="pytorch/pytorch#136504",
        title="tl.constexpr inputs to user-defined triton kernels should not be dynamic",
        feature="a constexpr computed from a symbolic size (BLOCK = next_power_of_2(cols)), dynamic shapes",
        status="closed; PR #136512 specializes the symbol (~2.6)",
        cells=("softmax_rows-raw-compile_dynamic", "softmax_rows-triton_op-compile_dynamic",
               "softmax_rows-raw-compile_no_recompile"),
        symptom=r"^fail @compile",
    ),
    Issue(
        key="pytorch/pytorch#120801",
        title="Calling custom triton kernels with torch.compile() twice with inputs of different sizes will use the "
              "wrong grid for the first call.",
        feature="one kernel launched several times in one graph with different sizes (the case's grids are equal)",
        status="closed; oulgen's PRs, Feb-Mar 2024 (~2.3; numbers unknown)",
        cells=("autotune_sizes-raw-compile_default", "autotune_sizes-triton_op-compile_default"),
        symptom=WRONG,
        gap="the case's three launches share one grid, (rows,); the issue's grids differ",
    ),
    Issue(
        key="pytorch/pytorch#164124",
        title="(title not in the corpus; PR #186886 'Fix keyed user Triton autotune in Inductor' fixes it)",
        feature="an autotuned kernel keyed on a size, launched on several sizes: Inductor kept one config for all",
        status="unknown state; PR #186886 (2026-06, after 2.11)",
        cells=("autotune_sizes-triton_op-compile_dynamic", "autotune_sizes-triton_op-compile_no_recompile",
               "autotune_sizes-raw-compile_dynamic"),
        symptom=WRONG,
    ),
    Issue(
        key="pytorch/pytorch#120478",
        title="torch.compile makes triton kernel slower",
        feature="stride arguments equal to 1 not specialized as constants: slower, not wrong",
        status="closed; PR #120579 (~2.3)",
        gap="the chart checks results, not speed: no cell compares a compiled user kernel's time with eager",
    ),
    Issue(
        key="pytorch/pytorch#132196",
        title="triton kernels (and maybe custom ops) that mutate multiple inputs silently incorrect with torch.compile",
        feature="one kernel storing into two outputs (inputs requiring grad), torch.compile(fullgraph=True)",
        status="closed; fix unknown",
        cells=("two_outputs-raw-compile_fullgraph", "two_outputs-triton_op-compile_fullgraph",
               "sincos_grad-raw_autograd-train_compile_fullgraph"),
        symptom=WRONG,
    ),
    Issue(
        key="pytorch/pytorch#130243",
        title="user-defined triton kernels + inductor stride re-ordering can lead to silent incorrectness",
        feature="a kernel assuming row-major input fed by an intermediate whose layout Inductor picks (x @ w)",
        status="closed; fix unknown",
        cells=("mm_then_kernel-raw-compile_default", "mm_then_kernel-triton_op-compile_default",
               "mm_then_kernel-raw-compile_max_autotune"),
        symptom=WRONG,
    ),
    Issue(
        key="pytorch/pytorch#136550",
        title="torch.compiled custom Triton kernels can output incorrect results",
        feature="mutation analysis fails ('assuming every input is mutated'); autotuned GEMM with prune_configs_by",
        status="closed; fix unknown",
        cells=("matmul-raw-compile_fullgraph", "matmul-triton_op-compile_fullgraph",
               "autotune_sizes-raw-compile_fullgraph"),
        symptom=rf"{WRONG}|{MUTATION_FALLBACK}",
    ),
    Issue(
        key="pytorch/pytorch#170049",
        title="`torch.compile` fails to capture user-defined kernels with latest Triton",
        feature="any kernel: TTIR mutation analysis raises IndexError on a newer Triton and Inductor falls back",
        status="open; candidate fix PR #172354 (merge not confirmed)",
        cells=("add-raw-compile_default", "matmul-raw-compile_default", "layernorm-raw-compile_default"),
        symptom=MUTATION_FALLBACK,
    ),
    Issue(
        key="pytorch/pytorch#173795",
        title="[release 2.11] [triton] test_triton_kernels.py::MutationTests::test_while_loop",
        feature="a `while` loop (scf.while) in the kernel: mutation analysis under the 2.11 Triton pin",
        status="open; fix unknown",
        cells=("while_loop-raw-compile_default", "while_loop-triton_op-compile_default"),
        symptom=rf"{BROKEN}|{MUTATION_FALLBACK}",
    ),
    Issue(
        key="pytorch/pytorch#128061",
        title="torch.compile doesn't work well with custom triton kernel from Mamba",
        feature="@triton.heuristics stacked on @triton.autotune: the kernel is not a JITFunction",
        status="closed; fix unknown (heuristics support came with PR #142208, Dec 2024)",
        cells=("heuristics_autotune-raw-compile_default", "heuristics_autotune-raw-compile_fullgraph",
               "heuristics_autotune-triton_op-compile_default"),
        symptom=rf"JITFunction|{MUTATION_FALLBACK}|{WRONG}",
    ),
    Issue(
        key="pytorch/pytorch#141823",
        title="User-defined triton kernel: inductor emits invalid python when autotune configs have empty meta-param dicts",
        feature="autotune Configs with empty kwargs `{}`",
        status="closed; fix unknown",
        gap="no case has an autotune Config with an empty kwargs dict",
    ),
    Issue(
        key="pytorch/pytorch#124601",
        title="Unable to use `torch.compile()` with triton's `TensorWrapper` in custom triton kernel",
        feature="fp8 tensors given to a kernel, under torch.compile",
        status="closed; fix unknown (needs reproduction; TensorWrapper later left Triton)",
        cells=("fp8_cast-raw-compile_default", "fp8_cast-triton_op-compile_default"),
        gap="the case passes a torch float8 tensor as it is, not wrapped by triton.reinterpret (TensorWrapper)",
    ),
    Issue(
        key="triton-lang/triton#4072",
        title="Calling torch.compile fails when Triton kernel arguments include torch.language.dtype",
        feature="a tl.dtype constexpr argument picked from the input's torch dtype",
        status="open; the torch side added triton.language.dtype support in PR #121690 (Mar 2024)",
        cells=("dtype_arg-raw-compile_default", "dtype_arg-raw-compile_fullgraph", "dtype_arg-triton_op-compile_fullgraph"),
    ),
    Issue(
        key="pytorch/pytorch#176712",
        title="torch.compile crashes on user-defined Triton kernel referencing triton.language.dtype globals",
        feature="a kernel reaching triton.language dtype globals through a constexpr_function helper",
        status="open; not fixed",
        gap="no case's kernel calls a @constexpr_function helper or reads a tl.dtype global "
            "(constexpr_global reads tl.constexpr numbers)",
    ),
    Issue(
        key="pytorch/pytorch#161868",
        title="SGLang torch.compile and triton `NameError('cuda_capability_geq is not defined')` on GPT-OSS",
        feature="module-level globals of the kernel re-emitted in Inductor's code, with CUDA graphs",
        status="closed; fix unknown",
        cells=("constexpr_global-raw-compile_default", "constexpr_global-raw-compile_cudagraphs",
               "constexpr_global-triton_op-compile_cudagraphs"),
        symptom=r"NameError|is not defined",
        gap="the case's globals are tl.constexpr numbers, not a helper function the kernel calls",
    ),
    Issue(
        key="pytorch/pytorch#194170",
        title="NameError in ast_to_ttir when a triton.jit function is called through a module-level binding whose "
              "name differs from its def name",
        feature="a @triton.jit helper called through an alias, in a triton_op under torch.compile",
        status="open; not fixed (has a workaround)",
        gap="no case calls a @triton.jit helper through a differently named binding (layernorm calls its own by name)",
    ),
    Issue(
        key="pytorch/pytorch#148289",
        title="Triton Kernel Rejects NamedTupleVariable Arguments",
        feature="a tuple argument to a kernel, torch.compile(fullgraph=True) and max-autotune",
        status="open; not fixed",
        cells=("dtype_arg-raw-compile_fullgraph", "dtype_arg-raw-compile_max_autotune"),
        symptom=r"Unexpected argument type",
        gap="the case's tuple constexpr is a plain tuple of floats, not a NamedTuple",
    ),
    Issue(
        key="pytorch/pytorch#193257",
        title="torch.compile cannot pass symbolic stride tuples to Triton kernels",
        feature="a tuple argument holding symbolic strides, dynamic shapes",
        status="open; not fixed (workaround: one argument per stride, or a custom_op)",
        cells=("dtype_arg-raw-compile_dynamic",),
        symptom=r"Unexpected argument type",
        gap="the case's tuple holds constants, not x.stride()",
    ),
    Issue(
        key="pytorch/pytorch#122768",
        title="[dynamo] Tracing triton kernel unexpectedly",
        feature="a launcher under `with torch.cuda.device(x.device.index):`",
        status="closed; fix unknown",
        cells=("device_guard-raw-compile_default", "device_guard-raw-compile_fullgraph",
               "device_guard-triton_op-compile_fullgraph"),
        symptom=r"torch\.cuda\.device|jit\.py",
    ),
    Issue(
        key="pytorch/pytorch#136056",
        title="capture_triton gets skipped by dynamo",
        feature="capture_triton/wrap_triton called in the compiled function itself, with a grid function, fullgraph",
        status="open; unknown (wrap_triton became public later)",
        gap="no style calls wrap_triton outside a triton_op: triton_op cells do not make Dynamo trace it",
    ),
    Issue(
        key="pytorch/pytorch#163811",
        title="compile error with custom softmax triton kernel",
        feature="a @triton.jit helper with a default argument (`other=None`) returning a tuple",
        status="closed; fix unknown",
        cells=("layernorm-raw-compile_default", "layernorm-triton_op-compile_default"),
        gap="the case's helper returns a tuple but has no default argument",
    ),
    Issue(
        key="pytorch/pytorch#192510",
        title="[inductor][aot_autograd] user defined triton kernels view output buffer storages are not preserved",
        feature="an output buffer that is a view of a larger padded tensor",
        status="open; not fixed",
        gap="no case writes into an output that is a view of a larger buffer (views reads a view input)",
    ),
    Issue(
        key="pytorch/pytorch#192219",
        title="BUG: Inductor `as_strided` silently reads out of bounds",
        feature="a view with a storage offset passed as a mutated pointer argument",
        status="closed; PR #192227 (Aug 2026, after 2.11)",
        gap="no case mutates a view argument (views reads one; scale_inplace mutates a whole tensor)",
    ),
    Issue(
        key="pytorch/pytorch#192226",
        title="BUG: Out of Bounds Reads with offset/strided views on compiled kernels",
        feature="a view input with a storage offset and a wider row stride, under torch.compile",
        status="closed; PR #192227 (Aug 2026, after 2.11)",
        cells=("views-raw-compile_default", "views-triton_op-compile_default", "views-raw_autograd-compile_fullgraph"),
        symptom=rf"{WRONG}|illegal memory access",
    ),
    Issue(
        key="pytorch/pytorch#128039",
        title="`torch.compile` fails with customized Triton Operator on Triton 2.2",
        feature="a slice view fed to a user kernel; wrong results under mode='reduce-overhead'",
        status="closed; fix unknown",
        cells=("views-raw-compile_default", "views-raw-compile_cudagraphs", "views-triton_op-compile_cudagraphs"),
        symptom=rf"has no attribute 'layout'|{WRONG}",
    ),
    Issue(
        key="pytorch/pytorch#184247",
        title="[Inductor] Incorrect epilogue fusion for user-defined Triton kernels when output has layout-changing "
              "ops (`.T.contiguous()`)",
        feature="epilogue fusion into a user kernel (epilogue_fusion_user_defined_triton_kernel=True)",
        status="closed; fix unknown (the opt-in flag looks newer than 2.11)",
        gap="no row turns on epilogue_fusion_user_defined_triton_kernel",
    ),
    Issue(
        key="pytorch/pytorch#134372",
        title='user-defined triton kernel lowering causes inductor to codegen small kernels with float("nan")',
        feature="a kernel in an autograd.Function: Inductor adds small NaN-filling kernels",
        status="closed; fix unknown",
        gap="extra kernels that leave results right pass every cell: the chart does not read Inductor's code",
    ),
    Issue(
        key="pytorch/pytorch#119348",
        title="torch.compile + user defined triton kernel falsely reports mutated input",
        feature="a backward kernel in an autograd.Function: grad_output wrongly marked as mutated",
        status="open; unknown",
        cells=("column_sum_grad-raw_autograd-train_compile_default", "layernorm-raw_autograd-train_compile_default",
               "sincos_grad-raw_autograd-train_compile_default"),
        symptom=r"mutated during the backward",
    ),
    Issue(
        key="pytorch/pytorch#174124",
        title="partitioner error if a forward output is also saved and mutated by triton kernel in the backward",
        feature="an autograd.Function whose backward kernel gets the saved forward outputs, compiled for training",
        status="open; not fixed",
        cells=("sincos_grad-raw_autograd-train_compile_default", "sincos_grad-raw_autograd-train_compile_fullgraph"),
        gap="the case's backward kernel reads the saved outputs (sin, cos) but mutates none of them",
    ),
    Issue(
        key="pytorch/pytorch#125489",
        title="[Compiled autograd] Support user-defined triton kernel for which speculate_subgraph on bw failed",
        feature="a backward reading .stride() under compiled autograd, falling back to eager",
        status="closed; fix unknown",
        gap="no row runs compiled autograd: the training rows compile the backward through AOTAutograd",
    ),
    Issue(
        key="pytorch/pytorch#121526",
        title="Compiling RMSNorm Triton Kernal gives error",
        feature="an autograd.Function around a norm kernel with an optional (None) tensor argument",
        status="open; unknown",
        cells=("layernorm-raw_autograd-compile_default", "optional_bias-raw_autograd-compile_default",
               "layernorm-raw_autograd-train_compile_default"),
    ),
    Issue(
        key="pytorch/pytorch#181735",
        title="[vLLM][inductor][triton] decompose_triton_kernel_wrapper_functional AssertionError under dynamic shapes",
        feature="the functional kernel wrapper decomposed with symbolic shapes",
        status="closed; fix unknown",
        cells=("add-raw-compile_dynamic", "grid_2d-raw-compile_dynamic", "scale_inplace-raw-compile_dynamic",
               "matmul-triton_op-compile_dynamic"),
        symptom=r"AssertionError|decompose_triton_kernel_wrapper_functional",
    ),
    Issue(
        key="pytorch/pytorch#160646",
        title="AOT compilation of Triton op fails in PyTorch 2.8",
        feature="a triton_op whose output is sized cdiv(n, BLOCK) of a dynamic dim, through AOTInductor",
        status="closed; fix unknown (a 2.7 to 2.8 regression)",
        cells=("block_sums-triton_op-aoti_nonstrict", "block_sums-triton_op-aoti_strict",
               "block_sums-triton_op-aoti_fresh_nonstrict"),
    ),
    Issue(
        key="pytorch/pytorch#198068",
        title="AOTInductor drops the storage offset of a mutable view argument under dynamic shapes (missing lowering "
              "for aten.sym_storage_offset)",
        feature="a custom_op mutating a view argument, AOTInductor with dynamic shapes",
        status="open; not fixed",
        cells=("views-custom_op-aoti_nonstrict", "scale_inplace-custom_op-aoti_nonstrict"),
        symptom=rf"{WRONG}|sym_storage_offset",
        gap="no case mutates a view: views' view is read, scale_inplace mutates a whole tensor",
    ),
    Issue(
        key="pytorch/pytorch#124111",
        title="torch.compile-ing triton kernels with inputs created under inference mode leads to error",
        feature="inputs made under torch.inference_mode(), a kernel writing an argument",
        status="closed; PR #124489 (June 2024)",
        cells=("add-raw-compile_inference_mode", "scale_inplace-raw-compile_inference_mode",
               "scale_inplace-triton_op-compile_inference_mode"),
        symptom=r"Inference tensors do not track version counter",
    ),
    Issue(
        key="pytorch/pytorch#125989",
        title="torch.compile uses customed trition kernel reports: RuntimeError: Inference tensors do not track "
              "version counter",
        feature="a layer-norm kernel compiled under torch.inference_mode()",
        status="closed; fix unknown (likely a duplicate of #124111)",
        cells=("layernorm-raw-compile_inference_mode", "layernorm-raw_autograd-compile_inference_mode"),
        symptom=r"Inference tensors do not track version counter",
    ),
    Issue(
        key="pytorch/pytorch#126864",
        title="Compile with non-default mode + triton kernel fails",
        feature="the tutorial's autotuned add kernel under a non-default torch.compile mode",
        status="open; unknown",
        cells=("add_autotuned-raw-compile_cudagraphs", "add_autotuned-raw-compile_max_autotune",
               "add_autotuned-triton_op-compile_max_autotune"),
    ),
    Issue(
        key="pytorch/pytorch#163129",
        title="[Graph Partition] Handle custom op input mutation correctly",
        feature="a custom op mutating its input under CUDA graphs, beside a cudagraph-unsafe op (graph partition)",
        status="closed; fix unknown",
        cells=("scale_inplace-custom_op-compile_cudagraphs",),
        symptom=WRONG,
        gap="no cudagraph-unsafe op beside the kernel, and graph partition is not turned on",
    ),
    Issue(
        key="pytorch/pytorch#125539",
        title="`torch.compile` error with user-defined kernel: \"No module named 'nvi'\"",
        feature="triton.ops.matmul (a bundled autotuned kernel with perf-model pruning)",
        status="open; obsolete (triton.ops left Triton 3)",
        gap="no case uses triton.ops, which Triton 3 no longer ships",
    ),
    Issue(
        key="pytorch/pytorch#119541",
        title="User Triton kernels do not work with torch.compile (torch 2.2)",
        feature="a GPU below compute capability 7.0",
        status="closed; not a bug (the GPU is too old for Triton)",
        gap="the GPU chart runs on an H100/H200; no row runs on a pre-Volta GPU",
    ),
    Issue(
        key="triton-lang/triton#5082",
        title="pre_/post_hook in triton.autotune break with kwargs passed to the kernel",
        feature="restore_value on an autotuned kernel launched with keyword arguments",
        status="closed; Triton PR #5083 (Nov 2024)",
        gap="no case launches an autotuned kernel with its reset or restored argument passed by keyword",
    ),
    Issue(
        key="triton-lang/triton#6547",
        title="Using triton.autotune with the kernel updated in place will result in incorrect output",
        feature="restore_value/reset_to_zero on an autotuned kernel that updates its input in place",
        status="closed; unknown (likely a usage error)",
        gap="no case autotunes a kernel that updates its input in place (scale_inplace is not autotuned)",
    ),
    Issue(
        key="triton-lang/triton#7181",
        title="pre_hook (like reset_to_zero) is not called after autotununing",
        feature="reset_to_zero on an atomic output: the last benchmark's counts left in place, in eager",
        status="open; not fixed in Triton 3.3.1",
        cells=("histogram_atomic-raw-eager", "histogram_atomic-raw_autograd-eager", "histogram_atomic-raw-compile_default"),
        symptom=WRONG,
    ),
    Issue(
        key="triton-lang/triton#4051",
        title="triton cache does not invalidate cache correctly when dynamically choosing a function to call",
        feature="a @triton.jit helper passed as a constexpr, edited between runs on a warm cache",
        status="closed; unknown",
        gap="warm_cache_edit edits the case's kernels, never a helper passed to one as a constexpr",
    ),
    Issue(
        key="pytorch/pytorch#180911",
        title="[vllm] [triton 3.7] AOTAutogradCache.save: _pickle.PicklingError on triton launcher function",
        feature="a compile that saves its graph to AOTAutograd's cache, on torch 2.12 with Triton 3.7",
        status="open in the corpus; PR #181463 (cherry-picked to 2.12 as #181751) makes the save a bypass",
        cells=("add-raw-cache_artifacts_fresh", "add-triton_op-cache_artifacts_fresh", "add-raw-warm_cache_edit"),
        symptom=r"PicklingError|Can't pickle <function launcher",
        gap="the chart ran Triton 3.6; the issue needs Triton 3.7's generated launcher",
    ),
    Issue(
        key="pytorch/pytorch#172542",
        title="mega cache does not contain triton cubin files",
        feature="torch.compiler.save_cache_artifacts / load_cache_artifacts in a fresh process",
        status="open in the corpus; PR #184953 (2026-05, after 2.11) says it fixes it",
        gap="a missing cubin costs a Triton recompile, not a wrong result: cache_artifacts_fresh cells pass either way",
    ),
)


def load_cells(results_path: str) -> tuple[dict[str, dict], str]:
    """The chart's cells by id, and the torch it ran on ("2.11.0+cu130")."""
    with open(results_path) as f:
        chart = json.load(f)
    torch_version = (chart.get("fingerprint") or {}).get("torch") or "unknown"
    return {cell["cell"]: cell for cell in chart.get("cells", [])}, torch_version


def shown(cell: dict | None) -> str:
    """What the chart shows for one cell, in a line: its outcome, and where it did not pass, the stage and first line."""
    if cell is None:
        return "not charted on the GPU yet"
    outcome = cell.get("outcome") or "unknown"
    if outcome == "pass":
        # A pass with the kernel outside the graph says the compiler never met the kernel.
        breaks = cell.get("graph_breaks") or 0
        if cell.get("kernel_in_graph") == "absent" and breaks:
            return f"pass (kernel outside the graph, {breaks} graph breaks)"
        return f"pass ({breaks} graph breaks)" if breaks else "pass"
    message = " ".join((cell.get("message") or "").split())[:MESSAGE_CHARS]
    stage = f" @{cell['stage']}" if cell.get("stage") and outcome != "wrong" else ""
    return f"{outcome}{stage}: {message}" if message else f"{outcome}{stage}"


def surfaces(issue: Issue, cell: dict | None) -> bool:
    """Whether a cell shows the issue's symptom: in its outcome and message, or in a warning PyTorch logged."""
    if cell is None:
        return False
    text = " | ".join([shown(cell), *map(str, cell.get("warnings") or []), *map(str, cell.get("degradations") or [])])
    return re.search(issue.symptom, text) is not None


def verdict(issue: Issue, cells: dict[str, dict]) -> tuple[str, str]:
    """(kind, words): what the chart says about the issue; the kind is counted in the summary."""
    if not issue.cells:
        return "not covered", f"not covered: {issue.gap}"
    found = [cells.get(cell_id) for cell_id in issue.cells]
    surfacing = [cell_id for cell_id, cell in zip(issue.cells, found) if surfaces(issue, cell)]
    if surfacing:
        return "surfaces", f"would surface it ({', '.join(surfacing)})"
    charted = [cell for cell in found if cell is not None and cell.get("outcome") != "skipped"]
    if not charted:
        return "not charted", "not charted on the GPU yet"
    passing = [cell for cell in charted if cell.get("outcome") == "pass"]
    failing = [cell for cell in charted if cell.get("outcome") != "pass"]
    other = f"fails for another reason: {shown(failing[0])}{known(failing[0])}" if failing else ""
    if passing and issue.gap:
        # The nearest case lacks the trigger: its pass says nothing of the issue.
        return "near pass", f"passes, but not a replay: {issue.gap}"
    if passing:
        return "fixed", "fixed in this torch (cell passes)" + (f"; another cell {other}" if other else "")
    return "other", other


def known(cell: dict) -> str:
    """The known issue the chart traced a cell's failure to, where it did: why it is another reason."""
    return f" (known issue: {cell['known_issue']})" if cell.get("known_issue") else ""


def escape(text: str) -> str:
    """Text for a Markdown table cell: a pipe would end the cell, a newline the row."""
    return text.replace("|", "\\|").replace("\n", " ")


def row(issue: Issue, cells: dict[str, dict]) -> str:
    """One issue's line of the table."""
    ids = "<br>".join(f"`{cell_id}`" for cell_id in issue.cells) or "none"
    chart = "<br>".join(escape(shown(cells.get(cell_id))) for cell_id in issue.cells) or "-"
    columns = (f"[{issue.key}]({issue.link})", escape(issue.title), escape(issue.feature), escape(issue.status),
               ids, chart, escape(verdict(issue, cells)[1]))
    return "| " + " | ".join(columns) + " |"


def summary(cells: dict[str, dict], torch_version: str) -> str:
    """The counts of verdicts over every issue, in one sentence."""
    kinds = [verdict(issue, cells)[0] for issue in ISSUES]
    count = kinds.count
    covered = len(ISSUES) - count("not covered")
    release = ".".join(torch_version.split("+")[0].split(".")[:2])
    return (f"**{len(ISSUES)} issues, {covered} with cells: the GPU chart (torch {torch_version}) shows "
            f"{count('surfaces')} failing as the issue describes, {count('fixed')} passing (fixed in torch {release}), "
            f"{count('near pass')} passing on a nearest case that lacks the trigger, {count('other')} failing for "
            f"another reason only, {count('not charted')} not charted yet; {count('not covered')} not covered by a "
            f"built-in case.**")


HEADER = ("| issue | title | feature | status upstream | cells | the GPU chart shows | verdict |\n"
          "|---|---|---|---|---|---|---|")


def render(results_path: str) -> str:
    """The Markdown block for docs/bug-replay.md: the summary, then the table, an issue a row."""
    cells, torch_version = load_cells(results_path)
    lines = [summary(cells, torch_version), "", HEADER, *(row(issue, cells) for issue in ISSUES)]
    return "\n".join(lines)


def replace_block(document: str, block: str) -> str:
    """The document with the text between the markers replaced by `block`."""
    head, rest = document.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def committed_block(document: str) -> str:
    """The text between the markers, as render() gives it."""
    return document.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str]) -> int:
    results_path = argv[1] if len(argv) > 1 else os.path.join(ROOT, DEFAULT_RESULTS)
    with open(DOC) as f:
        document = f.read()
    with open(DOC, "w") as f:
        f.write(replace_block(document, render(results_path)))
    print(f"docs/bug-replay.md: {len(ISSUES)} issues replayed against {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

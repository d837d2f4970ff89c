"""The gate's CUDA path on any machine: the static rules for device bodies, nvcc, the CUDA symbol allowlist,
and the run stages left pending (and said so) where no GPU can run them. Needs nvcc, which CI has."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorsmith_forge.generator.loop import Regenerator
from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.generator.project import Project
from tensorsmith_forge.validators import cuda, static_check
from tensorsmith_forge.validators.gate import Gate

try:
    NVCC = cuda.find_nvcc()
except cuda.NvccMissing as exc:
    NVCC, WHY = None, str(exc)
else:
    WHY = ""
needs_nvcc = pytest.mark.skipif(NVCC is None, reason=f"no nvcc: {WHY}")


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    project = Project.locate(Path(__file__))
    gate = Gate(project.root, wall_s=60)
    regen = Regenerator(project, gate)
    catalog = load_catalog(project.root)

    def run(op: str, body: str):
        return gate.judge(regen.candidate(catalog.op(op), "cuda", body, "external"))

    return run


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ("atomicAdd(&acc, x);", "cuda-atomics"),
        ("__threadfence();", "cuda-atomics"),
        ("float* p; cudaMalloc(&p, 64);", "cuda-runtime"),
        ("cublasSgemm(h);", "cuda-runtime"),
        ("long long t = clock64();", "cuda-clock"),
        ("printf(\"%d\", 1);", "io"),
        ("static __shared__ float keep[4];", "static-storage"),
        ("asm(\"trap;\");", "asm"),
    ],
    ids=["atomics", "fence", "cudaMalloc", "cublas", "clock64", "printf", "static-shared", "asm"],
)
def test_cuda_body_rules_reject(body: str, rule: str) -> None:
    assert rule in {v.rule for v in static_check.check_body(body, "cuda")}


def test_cuda_bodies_may_stage_tiles_but_cpu_bodies_may_not() -> None:
    tile = "__shared__ float tile[16][16];\ntile[0][0] = 1.0f;\n__syncthreads();\n"
    assert static_check.check_body(tile, "cuda") == []
    assert {v.rule for v in static_check.check_body(tile, "cpu")} == {"reserved-identifier"}


@needs_nvcc
def test_template_cuda_kernel_is_accepted_with_run_stages_pending_without_gpu(judge) -> None:
    verdict = judge("add", "return static_cast<out_t>(ts::ops::add(x1, x2));")
    assert verdict.accepted, verdict.message
    ran = set(verdict.report["stages"])
    if cuda.gpu_count() == 0:
        assert ran == {"static", "compile", "symbols"}
        assert verdict.report["pending"] == ["differential", "sanitizers"]
        assert "pending: no CUDA device" in verdict.message
    else:
        assert {"differential", "sanitizers"} <= ran


@needs_nvcc
def test_cuda_compile_error_points_at_the_body_line(judge) -> None:
    verdict = judge("exp", "const compute_t y = x;\nreturn static_cast<out_t>(std::exp(undeclared_name + y));")
    assert not verdict.accepted and verdict.stage == "compile"
    assert "body line 2" in verdict.message and "undeclared_name" in verdict.message


def test_without_nvcc_a_cuda_kernel_is_judged_by_its_static_rules_and_the_rest_is_pending(monkeypatch, tmp_path) -> None:
    def no_nvcc() -> cuda.CudaToolchain:
        raise cuda.NvccMissing("the gate needs nvcc for CUDA kernels (hidden by this test)")

    monkeypatch.setattr(cuda.CudaToolchain, "find", staticmethod(no_nvcc))
    project = Project.locate(Path(__file__))
    gate = Gate(project.root, cache_dir=tmp_path, wall_s=60)
    regen = Regenerator(project, gate)
    candidate = regen.candidate(load_catalog(project.root).op("add"), "cuda", "return static_cast<out_t>(ts::ops::add(x1, x2));",
                                "external")  # fmt: skip
    verdict = gate.judge(candidate)
    assert verdict.accepted, verdict.message
    assert set(verdict.report["stages"]) == {"static"}
    assert verdict.report["pending"] == ["compile", "symbols", "differential", "sanitizers"]
    assert "no CUDA compiler (nvcc)" in verdict.message
    assert regen._verdict_text("cuda") == "accepted by static; pending (no nvcc): compile, symbols, differential, sanitizers"
    # The static rules still reject what they always reject.
    banned = gate.judge(regen.candidate(load_catalog(project.root).op("add"), "cuda", "atomicAdd(&x1, x2);\nreturn x1;", "external"))
    assert not banned.accepted and banned.stage == "static"
    assert gate.pending_stages("cpu") == ()


@needs_nvcc
def test_where_compute_sanitizer_cannot_run_the_sanitizers_are_pending_not_passed(monkeypatch, tmp_path) -> None:
    """On a GPU host where the tool is missing (or fails a known-good kernel) the stage is held pending, with
    the probe's words, never counted as passed and never blamed on the kernel."""
    from tensorsmith_forge.validators import gate as gate_module

    monkeypatch.setattr(gate_module, "gpu_count", lambda: 1)
    monkeypatch.setattr(gate_module, "sanitizer_problem", lambda toolchain: "compute-sanitizer is not installed (test)")
    gate = Gate(Project.locate(Path(__file__)).root, cache_dir=tmp_path)
    assert gate.pending_reason("cuda") == "no compute-sanitizer"
    assert gate.pending_stages("cuda") == ("sanitizers",)
    assert gate.pending_why("cuda") == "compute-sanitizer cannot judge kernels on this machine (compute-sanitizer is not installed (test))"
    monkeypatch.setattr(gate_module, "sanitizer_problem", lambda toolchain: None)
    assert gate.pending_stages("cuda") == () and gate.pending_why("cuda") == ""


def test_a_sanitizer_without_its_own_report_leaves_the_stage_pending(monkeypatch, tmp_path) -> None:
    """Only compute-sanitizer's report (its error exit code or error summary) rejects; any other end of the
    run (error 999 on some hosts) is the tool's trouble: pending, named in the verdict and in the manifest."""
    from tensorsmith_forge.validators import gate as gate_module

    project = Project.locate(Path(__file__))
    gate = Gate(project.root, cache_dir=tmp_path, stages=("static", "sanitizers"))
    monkeypatch.setattr(gate, "pending_stages", lambda device: ())
    monkeypatch.setattr(gate_module, "compute_sanitizer", lambda toolchain: Path("/bin/true"))
    outcomes = iter([(3, "CUDA error 999: unknown error"), (gate_module.CUDA_SANITIZER_EXIT, "ERROR SUMMARY: 2 errors")])

    def run_pass(candidate, scratch, state, report, run_pass, limits, wrapper=None, kernel_o=None):
        code, output = next(outcomes)
        report[run_pass.label] = {"returncode": code, "output": output}
        return f"the candidate's process exited with status {code}"

    monkeypatch.setattr(gate, "_run_pass", run_pass)
    regen = Regenerator(project, gate)
    candidate = regen.candidate(load_catalog(project.root).op("add"), "cuda", "return static_cast<out_t>(ts::ops::add(x1, x2));",
                                "external")  # fmt: skip
    held = gate._judge(candidate, lambda stage: None)
    assert held.accepted and held.report["pending"] == ["sanitizers"]
    assert "sanitizers pending: compute-sanitizer memcheck ended without a report of its own" in held.message
    assert "pending (not judged here: compute-sanitizer memcheck ended without" in regen._verdict_text("cuda", held)
    rejected = gate._judge(candidate, lambda stage: None)
    assert not rejected.accepted and rejected.stage == "sanitizers" and rejected.message.startswith("compute-sanitizer memcheck")


@needs_nvcc
def test_gate_modules_link_the_cuda_runtime_without_library_paths() -> None:
    """As the runtime's build does: libcudart_static where the toolkit has it, else an rpath to libcudart."""
    toolchain = cuda.CudaToolchain.find()
    link = toolchain.runtime_link()
    assert link[0].endswith("libcudart_static.a") or any(flag.startswith("-Wl,-rpath,") for flag in link), link
    assert toolchain.major.isdigit()

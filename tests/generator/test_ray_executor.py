"""`--executor ray`: judgements on the nodes of a Ray cluster (generator/ray_executor.py).

Which nodes judge which device is a pure function, tested on made-up nodes. The rest runs a real local cluster
(a head and more nodes, each its own raylet, all on this machine): verdicts equal to this machine's own, a node
with another compiler refused, a worker process killed while judging, a node lost while judging, and a
regeneration whose MANIFEST.json is the same byte for byte."""

from __future__ import annotations

import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_tsgen, tree_hashes, tsgen_env

pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[cluster]'): the cluster tests cannot run")

from ray.cluster_utils import Cluster
from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.generator import api
from tensorsmith_forge.generator.loop import Regenerator
from tensorsmith_forge.generator.project import Project
from tensorsmith_forge.generator.proposers import extract_body
from tensorsmith_forge.generator.ray_executor import NodeReport, choose_nodes
from tensorsmith_forge.validators.gate import Gate

# Each node's object store holds a few bundles and candidates: a small one leaves memory to the judgements.
NODE = {"num_cpus": 1, "object_store_memory": 128 * 1024 * 1024}
GXX, NVCC = "g++ (Debian 12.2.0) 12.2.0", "Build cuda_13.0"
SALT = "5a" * 32  # one hidden-case salt for the driver and the local gate: their verdicts must agree
# The cheapest kernels to judge (a few seconds each), on both devices.
OPS = "bitwise_[ai]n[dv]*"  # bitwise_and, bitwise_invert


def node(name: str, compiler: str = GXX, nvcc: str | None = NVCC, pending: str | None = "no GPU", code: str = "gate",
         gpus: float = 0.0, problem: str = "") -> NodeReport:  # fmt: skip
    cuda = f"{compiler} | {nvcc or 'no nvcc'} | pending: {pending or 'none'}"
    return NodeReport(name * 8, name, 2.0, gpus, code, compiler, nvcc, {"cpu": f"{compiler} | pending: none", "cuda": cuda},
                      {"cpu": None, "cuda": pending if nvcc else "no nvcc"}, {"cpu": "", "cuda": ""}, problem)  # fmt: skip


def names(nodes: list[NodeReport]) -> list[str]:
    return [n.host for n in nodes]


def test_nodes_that_would_judge_differently_are_refused() -> None:
    chosen, refused = choose_nodes([node("a"), node("b", compiler="g++ (Debian 13.1.0) 13.1.0"), node("c", code="other"),
                                    node("d", problem="BuildError: no C++ compiler found"), node("e", nvcc="Build cuda_12.4")],
                                   "gate", GXX, NVCC)  # fmt: skip
    assert names(chosen["cpu"]) == ["a", "e"] and names(chosen["cuda"]) == ["a"]
    assert any(line.startswith("b (bbbbbbbb): refused: its C++ compiler is 'g++ (Debian 13.1.0) 13.1.0'") for line in refused)
    assert any(line.startswith("c (cccccccc): refused: its tsgen's gate code differs") for line in refused)
    assert any("no C++ compiler found" in line for line in refused)
    assert any(line.startswith("e (eeeeeeee): not used for cuda kernels: its nvcc is 'Build cuda_12.4'") for line in refused)


def test_cuda_kernels_go_to_the_gpu_nodes_of_a_mixed_cluster() -> None:
    cluster = [node("cpu1"), node("gpu1", pending=None, gpus=1), node("cpu2"), node("gpu2", pending=None, gpus=4), node("bare", nvcc=None)]
    chosen, refused = choose_nodes(cluster, "gate", GXX, NVCC)
    assert names(chosen["cpu"]) == ["cpu1", "gpu1", "cpu2", "gpu2", "bare"]
    assert names(chosen["cuda"]) == ["gpu1", "gpu2"]  # in full, nowhere with stages pending
    # Without a GPU node, CUDA kernels are judged (stages pending) where nvcc is, never on a node without it.
    chosen, refused = choose_nodes([node("cpu1"), node("bare", nvcc=None)], "gate", GXX, NVCC)
    assert names(chosen["cuda"]) == ["cpu1"]
    chosen, refused = choose_nodes([node("cpu1"), node("bare", nvcc=None)], "gate", GXX, None)  # a driver without nvcc
    assert names(chosen["cuda"]) == ["cpu1"] and any(line.startswith("bare (barebare): not used for cuda kernels") for line in refused)


@pytest.mark.parametrize(("args", "error"), [
    (("validate", "--ray-address", "127.0.0.1:1"), "--ray-address names a Ray cluster: add --executor ray"),
    (("regen", "--check", "--executor", "ray"), "--check judges nothing: it takes no --executor"),
    (("validate", "--executor", "ray", "--jobs", "0"), "--jobs: must be at least 1"),
])  # fmt: skip
def test_executor_options_that_cannot_work_are_refused_before_anything_starts(pristine_checkout: Path, args: tuple[str, ...],
                                                                              error: str) -> None:  # fmt: skip
    result = run_tsgen(pristine_checkout, *args, timeout=120)
    assert result.returncode == 2 and error in result.stderr, result.stderr
    assert "Ray:" not in result.stdout  # no cluster was joined or started


# ---- a real cluster on this machine


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """A head and a second node, one CPU each. Their workers share this machine's gate cache (runtime objects
    keyed by content; a worker never reads or writes verdicts)."""
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("TSGEN_GATE_CACHE", os.environ.get("TSGEN_GATE_CACHE", str(ROOT / "build" / "gate")))
    started = Cluster(initialize_head=True, connect=False, head_node_args={**NODE, "include_dashboard": False})
    try:
        started.add_node(**NODE)
        yield started
    finally:
        started.shutdown()


def add_node_with_compiler(cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> str:
    """A node whose C++ compiler calls itself `version` (it compiles as g++ does): its node id."""
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "{version}"; exit 0; fi\nexec g++ "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    with monkeypatch.context() as scoped:  # the raylet and its workers inherit the environment at start
        scoped.setenv("CXX", str(wrapper))
        return cluster.add_node(**NODE).node_id


def raylet_pid(cluster: Cluster, node_id: str) -> int:
    found = next(n for n in cluster.list_all_nodes() if n.node_id == node_id)
    return found.all_processes["raylet"][0].process.pid


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (its workers), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def judging(pids: set[int]) -> list[int]:
    """The worker processes among `pids` that are running a judgement."""
    running = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::_judge"):
                running.append(pid)
        except OSError:
            continue
    return running


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def driver_env(root: Path, tmp_path: Path) -> dict[str, str]:
    """The tsgen driver's: a fresh verdict cache (every kernel is judged on the cluster), the shared salt."""
    return tsgen_env(root, TSGEN_GATE_CACHE=str(tmp_path / "driver-cache"), TSGEN_GATE_SALT=SALT)


def local_verdicts(root: Path, devices: tuple[str, ...] = api.DEVICES) -> dict[str, dict]:
    """This machine's own verdicts (and pending stages) on the kernels of `root`'s generated/ for `devices`,
    judged afresh with the same salt."""
    gate = Gate(root, cache_dir=Path(os.environ.get("TSGEN_GATE_CACHE", ROOT / "build" / "gate")), salt=bytes.fromhex(SALT))
    regenerator = Regenerator(Project.locate(root), gate)
    verdicts = {}
    for spec in load_catalog(root).ops:
        if not fnmatch.fnmatchcase(spec.name, OPS):
            continue
        for device in devices:
            body, proposer = extract_body((root / "generated" / api.kernel_path(spec, device)).read_text(encoding="utf-8"))
            verdict = gate.judge_afresh(regenerator.candidate(spec, device, body, proposer))
            verdicts[f"{spec.name}.{device}"] = {"verdict": verdict.report["verdict"], "pending": verdict.report["pending"]}
    return verdicts


def test_validate_on_a_cluster_gives_this_machines_verdicts(cluster: Cluster, checkout: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Two nodes judge, a third with another compiler is refused, and a worker killed in the middle of a
    judgement is replaced: the verdicts are this machine's, a rejection's message included."""
    refused = add_node_with_compiler(cluster, tmp_path, monkeypatch, "g++ (Another) 99.1.0")
    kernel = checkout / "generated" / api.kernel_path(next(s for s in load_catalog(checkout).ops if s.name == "bitwise_and"), "cpu")
    source = kernel.read_text(encoding="utf-8")
    assert "ts::ops::bitwise_and(x1, x2)" in source
    kernel.write_text(source.replace("ts::ops::bitwise_and(x1, x2)", "ts::ops::bitwise_or(x1, x2)"), encoding="utf-8")  # wrong
    report = tmp_path / "verdicts.json"
    # CPU kernels only: the cluster's scheduling, refusal and retry are the same for both devices, and CUDA's
    # compilations took this test to 165 s (the regeneration test below judges both devices on the cluster).
    command = [sys.executable, "-m", "tensorsmith_forge.generator", "validate", "--executor", "ray", "--ray-address", cluster.address,
               "--ops", OPS, "--device", "cpu", "--json", str(report)]  # fmt: skip
    with subprocess.Popen(command, cwd=checkout, env=driver_env(checkout, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as driver:  # fmt: skip
        workers = lambda: judging(descendants(os.getpid()))
        victim = wait_for(workers, 240, "a judgement to start")[0]
        time.sleep(1.0)  # in the middle of it
        os.kill(victim, signal.SIGKILL)
        output, _ = driver.communicate(timeout=600)
    assert driver.returncode == 1, output  # the wrong kernel
    assert "refused: its C++ compiler is 'g++ (Another) 99.1.0'" in output, output
    assert "bitwise_and.cpu: FAIL at differential" in output, output
    judged = json.loads(report.read_text(encoding="utf-8"))
    assert {v["verdict"].get("stage", "all") for v in judged.values()} == {"all", "differential"}
    on = {v["judged_on"] for v in judged.values()}
    assert len(on) == 2 and not any(refused[:8] in label for label in on), on
    assert {label: {"verdict": v["verdict"], "pending": v["pending"]} for label, v in judged.items()} == local_verdicts(checkout, ("cpu",))


def test_regen_on_a_cluster_that_loses_a_node_writes_the_same_manifest(cluster: Cluster, checkout: Path, tmp_path: Path) -> None:
    """Regenerating with every judgement on the cluster, one node lost in the middle: MANIFEST.json and every
    generated file are what this machine's run committed, byte for byte."""
    before = tree_hashes(checkout / "generated")
    second = next(n for n in cluster.list_all_nodes() if not n.is_head())
    command = [sys.executable, "-m", "tensorsmith_forge.generator", "regen", "--force", "--no-build", "--executor", "ray",
               "--ray-address", cluster.address, "--ops", OPS]  # fmt: skip
    with subprocess.Popen(command, cwd=checkout, env=driver_env(checkout, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as driver:  # fmt: skip
        wait_for(lambda: judging(descendants(raylet_pid(cluster, second.node_id))), 240, "a judgement on the second node")
        time.sleep(1.0)
        cluster.remove_node(second, allow_graceful=False)
        output, _ = driver.communicate(timeout=600)
    assert driver.returncode == 0, output
    assert f"({second.node_id[:8]}): lost; its judgements go to the other nodes" in output, output
    assert tree_hashes(checkout / "generated") == before

"""The gate on a Ray cluster: `tsgen regen|validate --executor ray [--ray-address ADDR]`.

The driver (the tsgen process) keeps everything a verdict is recorded with: the verdict cache, the hidden-case
salt, MANIFEST.json. A judgement that misses the cache travels to a node as one Ray task holding the candidate
(its rendered translation unit, op table and spec), the salt, the gate's settings and a bundle of the runtime
files the gate builds and includes (the same on every task, put in the object store once). The node judges it
with its own compilers in the gate's usual sandbox and returns the verdict, which the driver caches as if it had
judged locally.

Verdicts must not depend on where they were judged, so a node is used for a device only when
- it runs the same gate: its tsgen's code means what the driver's does (catalog/source_meaning.py), and the
  identity it computes for each candidate is the driver's (checked again on every task);
- its compilers are the driver's (the compiler is part of every verdict's cache key, Gate.machine): a node with
  no C++ compiler, another g++ or another nvcc is refused, with the reason printed once;
- for CUDA kernels, it leaves the same stages pending as the best nodes of the cluster: where some node has a
  GPU (and compute-sanitizer), CUDA kernels are judged only there, in full; elsewhere on nodes with nvcc alone.
Each task is pinned to a node the driver picked (the least busy of those accepted for its device). Ray retries
a task whose worker process dies on the same node; when the node itself is gone, the driver sends the judgement
to another. A run killed on the driver loses only what was in flight: the verdict cache holds the rest.

Starting a cluster (on each machine, the same Python environment with this checkout installed):
    head:    ray start --head --port=6379
    others:  ray start --address=HEAD_IP:6379
then `tsgen validate --executor ray --ray-address HEAD_IP:6379` (or RAY_ADDRESS). Without an address, tsgen
starts a Ray instance on this machine for the run.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from tensorsmith_forge.catalog.source_meaning import meaning
from tensorsmith_forge.validators.gate import Candidate, Gate, Verdict, gate_code_files

from .errors import GeneratorError

DEVICES = ("cpu", "cuda")
# What the gate reads from the repository besides its own package: the runtime it builds and includes, its
# harness module's source, the CUDA library list.
BUNDLED = ("runtime/include", "runtime/src/core", "runtime/src/cuda", "validators/csrc", "runtime/python/tensorsmith/_cuda_libs.py")
# Better first: how much of a CUDA kernel a node's verdict covers (Gate.pending_reason).
PENDING_ORDER = (None, "no compute-sanitizer", "no GPU", "no nvcc")
WORKER_RETRIES = 2  # Ray's retries of a task whose worker process died, on the same node
PROBE_TIMEOUT_S = 300.0  # a node's first probe may build nothing, but compute-sanitizer's probe compiles


class ClusterError(GeneratorError):
    """The cluster cannot judge what was asked of it (no node fit for a device, every node lost)."""


class WorkerRefused(Exception):
    """Raised on a node whose gate would not judge as the driver's does."""


@dataclass(frozen=True)
class RootBundle:
    """The repository files a judgement reads, by path relative to the root."""

    files: tuple[tuple[str, bytes], ...]

    @classmethod
    def of(cls, root: Path) -> RootBundle:
        paths: list[Path] = []
        for name in BUNDLED:
            path = root / name
            paths += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.is_file() else []
        return cls(tuple((p.relative_to(root).as_posix(), p.read_bytes()) for p in paths))

    @functools.cached_property  # every task keys its worker's gate by it
    def digest(self) -> str:
        digest = hashlib.sha256()
        for name, data in self.files:
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()

    def materialize(self, under: Path) -> Path:
        """The bundle as a directory tree under `under`, written once per content (atomically: a worker killed
        while writing leaves no half tree that a later task would take for whole)."""
        root = under / self.digest[:24]
        if root.is_dir():
            return root
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=under))
        for name, data in self.files:
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
        try:
            os.rename(staging, root)
        except OSError:  # another worker of this machine got there first: the same content
            if not root.is_dir():
                raise
        return root


@dataclass(frozen=True)
class GateSettings:
    """What the driver's gate judges with, besides the candidate: a node's gate must use the same."""

    salt: bytes
    stages: tuple[str, ...]
    wall_s: float
    compile_s: tuple[tuple[str, float], ...]  # per device (a tuple: the settings key the workers' gates)

    def __repr__(self) -> str:  # the salt is a secret: never in a log or an error Ray prints
        return f"GateSettings(stages={self.stages}, wall_s={self.wall_s}, compile_s={self.compile_s})"


@dataclass(frozen=True)
class NodeReport:
    """What a node's probe found: its compilers, the machine string (Gate.machine) it would judge each device
    with, or why it cannot judge at all."""

    node_id: str
    host: str
    cpus: float
    gpus: float
    gate_code: str
    compiler: str  # Toolchain.version()
    nvcc: str | None  # CudaToolchain.version, None without nvcc
    machine: dict[str, str]  # device -> Gate.machine(device)
    pending: dict[str, str | None]  # device -> Gate.pending_reason(device)
    pending_why: dict[str, str]
    problem: str  # why the node cannot judge at all ("" when it can)

    @property
    def label(self) -> str:
        return f"{self.host} ({self.node_id[:8]})"


def gate_code_digest() -> str:
    """What this installation's gate code means (its modules, harness source and catalog)."""
    digest = hashlib.sha256()
    for path in gate_code_files():
        digest.update(path.name.encode() + b"\0" + meaning(path))
    return digest.hexdigest()


# ---- on the nodes


def _worker_cache() -> Path:
    """Where a node keeps the runtime objects it built and the bundles it unpacked: TSGEN_GATE_CACHE, as for
    a local gate, else a directory of this user's under the temporary directory. It never holds verdicts."""
    path = Path(os.environ.get("TSGEN_GATE_CACHE") or Path(tempfile.gettempdir()) / f"tsgen-gate-{os.getuid()}")
    (path / "roots").mkdir(parents=True, exist_ok=True)
    return path


_worker_gates: dict[tuple[str, GateSettings], Gate] = {}
_worker_lock = threading.Lock()


def _worker_gate(bundle: RootBundle, settings: GateSettings) -> Gate:
    """One gate per bundle and settings in each worker process (its runtime objects stay built)."""
    key = (bundle.digest, settings)
    with _worker_lock:
        if key not in _worker_gates:
            cache = _worker_cache()
            _worker_gates[key] = Gate(bundle.materialize(cache / "roots"), cache_dir=cache, stages=settings.stages, wall_s=settings.wall_s,
                                      compile_s=dict(settings.compile_s), salt=settings.salt)  # fmt: skip
        return _worker_gates[key]


@ray.remote(num_cpus=0)
def _probe(bundle: RootBundle, settings: GateSettings, node_id: str, cpus: float, gpus: float) -> NodeReport:
    host = socket.gethostname()
    try:
        code = gate_code_digest()
        gate = _worker_gate(bundle, settings)
        compiler = gate.builder.toolchain.version()
        nvcc = gate.builder.cuda.version if gate.builder.has_nvcc else None
        machine = {device: gate.machine(device) for device in DEVICES}
        pending = {device: gate.pending_reason(device) for device in DEVICES}
        why = {device: gate.pending_why(device) for device in DEVICES}
    except Exception as exc:  # noqa: BLE001 - a node that cannot set up a gate is reported, not fatal
        return NodeReport(node_id, host, cpus, gpus, "", "", None, {}, {}, {}, f"{type(exc).__name__}: {exc}")
    return NodeReport(node_id, host, cpus, gpus, code, compiler, nvcc, machine, pending, why, "")


@ray.remote(num_cpus=1, max_retries=WORKER_RETRIES)
def _judge(bundle: RootBundle, settings: GateSettings, candidate: Candidate, identity: str, machine: str) -> Verdict:
    gate = _worker_gate(bundle, settings)
    if gate.identity(candidate) != identity:
        raise WorkerRefused("this node's gate or runtime differs from the driver's (the candidate's identity does not match)")
    if (here := gate.machine(candidate.device)) != machine:
        raise WorkerRefused(f"this node judges {candidate.device} kernels as '{here}', the cluster as '{machine}'")
    return gate.judge_afresh(candidate)


# ---- on the driver


def choose_nodes(reports: Iterable[NodeReport], code: str, compiler: str, nvcc: str | None) -> tuple[dict[str, list[NodeReport]], list[str]]:
    """The nodes that judge each device, and a line for each node left out of a device and why.

    `compiler` is the driver's C++ compiler (Toolchain.version()); `nvcc` its nvcc version, or None when the
    driver has none, in which case the CUDA nodes of the cluster decide among themselves. For CUDA, only the
    nodes with the fewest pending stages are used (a GPU node over one with nvcc alone)."""
    chosen: dict[str, list[NodeReport]] = {device: [] for device in DEVICES}
    refused: list[str] = []
    fit: list[NodeReport] = []
    for node in reports:
        if node.problem:
            refused.append(f"{node.label}: refused: its gate cannot start: {node.problem}")
        elif node.gate_code != code:
            refused.append(f"{node.label}: refused: its tsgen's gate code differs from the driver's (install this checkout there)")
        elif node.compiler != compiler:
            refused.append(f"{node.label}: refused: its C++ compiler is '{node.compiler}', the driver's '{compiler}' (the "
                           "compiler is part of every verdict's cache key)")  # fmt: skip
        else:
            fit.append(node)
    chosen["cpu"] = fit
    cuda = [n for n in fit if nvcc is None or n.nvcc == nvcc]
    refused += [f"{n.label}: not used for cuda kernels: its nvcc is '{n.nvcc or 'none'}', the driver's '{nvcc}'" for n in fit if n not in cuda]
    if cuda:
        best = min(PENDING_ORDER.index(n.pending["cuda"]) for n in cuda)
        top = [n for n in cuda if PENDING_ORDER.index(n.pending["cuda"]) == best]
        # With no nvcc of its own the driver takes the most common toolkit among the best nodes.
        machine = max({n.machine["cuda"] for n in top}, key=lambda m: (sum(n.machine["cuda"] == m for n in top), m))
        chosen["cuda"] = [n for n in top if n.machine["cuda"] == machine]
        refused += [f"{n.label}: not used for cuda kernels: it judges them as '{n.machine['cuda']}', the cluster as '{machine}'"
                    for n in cuda if n not in chosen["cuda"]]  # fmt: skip
    return chosen, refused


class RayGate(Gate):
    """A gate whose judgements run on the nodes of a Ray cluster; caching, identities and reports stay here."""

    def __init__(self, root: Path, address: str | None = None, cache_dir: Path | None = None, log: Callable[[str], None] = print,
                 **gate_args: Any) -> None:  # fmt: skip
        super().__init__(root, cache_dir=cache_dir, **gate_args)
        self.nodes: dict[str, list[NodeReport]] = {}  # device -> the nodes that judge it; until probed, this machine's view
        self._log = log
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS") or None
            # A cluster's own settings are not the driver's to give; an instance started here shares this machine's
            # gate cache, whose runtime objects are already built (its workers never read verdicts).
            local = {} if address else {"include_dashboard": False, "runtime_env": {"env_vars": {"TSGEN_GATE_CACHE": str(self.cache_dir)}}}
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False, **local)
            log(f"Ray: {'connected to ' + address if address else 'started a Ray instance on this machine'}")
        self._settings = GateSettings(self.salt, self.stages, self.wall_s, tuple(sorted(self.builder.compile_budget_s.items())))
        self._bundle = ray.put(RootBundle.of(root))
        reports = self._probe_nodes()
        nvcc = self.builder.cuda.version if self.builder.has_nvcc else None
        self.nodes, refused = choose_nodes(reports, gate_code_digest(), self.builder.toolchain.version(), nvcc)
        for line in refused:
            log(f"Ray: {line}")
        self._busy: dict[str, int] = {node.node_id: 0 for node in reports}
        self._lost: set[str] = set()
        self._nodes_lock = threading.Lock()  # the busy counts and lost nodes (Gate's own _lock guards the salt)
        for device in DEVICES:
            nodes = self.nodes[device]
            where = ", ".join(f"{n.label}: {n.cpus:g} CPU" + (f", {n.gpus:g} GPU" if n.gpus else "") for n in nodes) or "no node"
            pending = self.pending_reason(device) if nodes else None
            log(f"Ray: {device} kernels on {len(nodes)} node(s) ({where})" + (f"; pending there: {self.pending_why(device)}" if pending else ""))

    @property
    def capacity(self) -> int:
        """Judgements the accepted nodes run at once (their CPUs)."""
        return max(1, int(sum(n.cpus for n in {n.node_id: n for d in DEVICES for n in self.nodes[d]}.values())))

    def require(self, devices: Iterable[str]) -> None:
        """Refuses a run before it starts when some device it needs has no node to judge on."""
        missing = [device for device in devices if not self.nodes[device]]
        if missing:
            raise ClusterError(f"no node of the Ray cluster can judge {' or '.join(missing)} kernels as this machine's gate would "
                               "(see the refusals above)")  # fmt: skip

    def _probe_nodes(self) -> list[NodeReport]:
        alive = [n for n in ray.nodes() if n["Alive"]]
        refs = [_probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                .remote(self._bundle, self._settings, n["NodeID"], n["Resources"].get("CPU", 0.0), n["Resources"].get("GPU", 0.0))
                for n in alive]  # fmt: skip
        ready, late = ray.wait(refs, num_returns=len(refs), timeout=PROBE_TIMEOUT_S)
        for node, ref in zip(alive, refs):
            if ref in late:
                self._log(f"Ray: node {node['NodeID'][:8]} did not answer its probe within {PROBE_TIMEOUT_S:.0f} s: not used")
                ray.cancel(ref, force=True)
        reports = []
        for ref in ready:
            try:
                reports.append(ray.get(ref))
            except RayError as exc:  # e.g. the node cannot import tsgen
                node = alive[refs.index(ref)]
                self._log(f"Ray: node {node['NodeID'][:8]}: refused: its probe failed: {_last_line(exc)}")
        return reports

    # What the cluster's chosen nodes report stands for this machine's own in keys, texts and plans (the chosen
    # nodes of a device all report the same machine string, so the first speaks for them).

    def machine(self, device: str) -> str:
        return node.machine[device] if (node := self._speaker(device)) else super().machine(device)

    def pending_reason(self, device: str) -> str | None:
        return node.pending[device] if (node := self._speaker(device)) else super().pending_reason(device)

    def pending_why(self, device: str) -> str:
        return node.pending_why[device] if (node := self._speaker(device)) else super().pending_why(device)

    def _speaker(self, device: str) -> NodeReport | None:
        nodes = self.nodes.get(device)
        return nodes[0] if nodes else None

    def judge_afresh(self, candidate: Candidate, on_stage: Callable[[str], None] | None = None) -> Verdict:
        if candidate.device not in DEVICES:
            return super().judge_afresh(candidate, on_stage)
        identity, machine = self.identity(candidate), self.machine(candidate.device)
        full_gpu = candidate.device == "cuda" and self.pending_reason("cuda") in (None, "no compute-sanitizer")
        failures: list[str] = []
        while True:
            node = self._take(candidate.device, failures)
            try:
                ref = _judge.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
                                     num_gpus=1 if full_gpu else 0).remote(self._bundle, self._settings, candidate, identity, machine)  # fmt: skip
                verdict = ray.get(ref)
            except RayTaskError as exc:
                if isinstance(exc.cause, WorkerRefused):
                    self._drop(node, candidate.device, f"refused: {exc.cause}")
                    failures.append(f"{node.label}: {exc.cause}")
                    continue
                raise ClusterError(f"{candidate.op}.{candidate.device}: the gate failed on {node.label}: {_last_line(exc)}") from None
            except RayError as exc:  # the worker died past its retries, or the node is gone: another node judges it
                failures.append(f"{node.label}: {_last_line(exc)}")
                if not _alive(node.node_id):
                    self._drop(node, candidate.device, "lost")
                elif len(failures) > WORKER_RETRIES:
                    raise ClusterError(f"{candidate.op}.{candidate.device}: the cluster could not judge it: {'; '.join(failures)}") from None
                continue
            finally:
                self._release(node)
            report = {key: value for key, value in verdict.report.items() if key != "cached"}
            return replace(verdict, report={**report, "judged_on": node.label, "node_failures": failures} if failures else {**report, "judged_on": node.label})

    def _take(self, device: str, failures: list[str]) -> NodeReport:
        """The least busy node still judging `device` kernels (busy: judgements in flight per CPU)."""
        with self._nodes_lock:
            nodes = [n for n in self.nodes[device] if n.node_id not in self._lost]
            if not nodes:
                raise ClusterError(f"no node of the Ray cluster is left to judge {device} kernels" + (f": {'; '.join(failures)}" if failures else ""))
            node = min(nodes, key=lambda n: (self._busy[n.node_id] / max(n.cpus, 1.0), n.node_id))
            self._busy[node.node_id] += 1
            return node

    def _release(self, node: NodeReport) -> None:
        with self._nodes_lock:
            self._busy[node.node_id] -= 1

    def _drop(self, node: NodeReport, device: str, why: str) -> None:
        with self._nodes_lock:
            if why == "lost":
                if node.node_id in self._lost:
                    return
                self._lost.add(node.node_id)
            elif node in self.nodes[device]:
                self.nodes[device] = [n for n in self.nodes[device] if n is not node]
            else:
                return
        self._log(f"Ray: {node.label}: {why}; its judgements go to the other nodes")


def _alive(node_id: str) -> bool:
    return any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes())


def _last_line(exc: BaseException) -> str:
    """The line that says what went wrong (Ray's errors carry the remote traceback above it)."""
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__

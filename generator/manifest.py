"""generated/MANIFEST.json: per output, the hashes of its inputs and who wrote its kernel body.

No timestamps and no machine paths, so two regenerations from the same inputs
produce the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

MANIFEST_NAME = "MANIFEST.json"
FORMAT = 1


@dataclass(frozen=True)
class OutputRecord:
    sha256: str  # of the file's contents
    inputs: dict[str, str]  # input name (spec path, template path, "generator", "runtime_headers") -> sha256
    inputs_sha256: str  # hash over `inputs`: equal means nothing that determines the file changed
    op: str | None = None  # kernel outputs only
    device: str | None = None
    proposer: str | None = None  # who wrote the kernel body: template / claude / external
    body_sha256: str | None = None
    interface_sha256: str | None = None  # of api.interface(spec): what the shared files assume of the kernel
    verdict: str | None = None  # the gate's verdict when it was accepted
    judged_sha256: str | None = None  # Gate.identity of what it accepted (which gate, which kernel, which runtime)
    kernel_sha256: str | None = None  # Gate.kernel_identity of what it accepted: the kernel's own part of judged_sha256
    # What the proposer reports (Claude: model, attempts, tokens, cost_usd, wall_s, transcript); written
    # as top-level keys of the record, beside the fields above.
    details: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        fields = {k: v for k, v in asdict(self).items() if k != "details" and v is not None}
        return {**self.details, **fields}

    @staticmethod
    def from_json(data: dict[str, object]) -> OutputRecord:
        known = {f.name for f in dataclasses.fields(OutputRecord)} - {"details"}
        return OutputRecord(**{k: v for k, v in data.items() if k in known},  # type: ignore[arg-type]
                            details={k: v for k, v in data.items() if k not in known})  # fmt: skip


@dataclass
class Manifest:
    outputs: dict[str, OutputRecord] = field(default_factory=dict)  # path relative to generated/

    @staticmethod
    def load(generated_dir: Path) -> Manifest:
        path = generated_dir / MANIFEST_NAME
        return Manifest.parse(path.read_text(encoding="utf-8")) if path.exists() else Manifest()

    @staticmethod
    def parse(text: str) -> Manifest:
        try:
            data = json.loads(text)
            return Manifest({k: OutputRecord.from_json(v) for k, v in data["outputs"].items()})
        except (ValueError, KeyError, TypeError):
            return Manifest()  # unreadable: treated as empty, so everything is regenerated (or re-judged)

    def dumps(self) -> str:
        outputs = {name: self.outputs[name].to_json() for name in sorted(self.outputs)}
        return json.dumps({"format": FORMAT, "outputs": outputs}, indent=2, sort_keys=True) + "\n"

    def kernel_records(self) -> dict[tuple[str, str], OutputRecord]:
        return {(r.op, r.device): r for r in self.outputs.values() if r.op is not None and r.device is not None}

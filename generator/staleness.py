"""What `tsgen regen --check` reports: every file of generated/ that a regeneration would rewrite, and why.

Besides the kernels the loop finds stale, any output whose bytes no longer match the sha256 that
MANIFEST.json recorded for it was edited by hand, shared files (registration, bindings, stubs)
included; a regeneration overwrites those edits, so they are named rather than silently lost.
"""

from __future__ import annotations

from pathlib import Path

from .hashing import sha256_text
from .loop import RegenReport
from .manifest import Manifest

HAND_EDITED = "edited by hand"


def hand_edited(generated_dir: Path) -> list[str]:
    """Outputs (relative to generated/) whose contents differ from what the manifest recorded."""
    found = []
    for name, record in Manifest.load(generated_dir).outputs.items():
        path = generated_dir / name
        if path.is_file() and sha256_text(path.read_text(encoding="utf-8", errors="replace")) != record.sha256:
            found.append(name)
    return sorted(found)


def stale_files(report: RegenReport, generated_dir: Path) -> dict[str, str]:
    """path -> why ('' when the only reason is that its contents would change)."""
    reasons = {r.plan.path: r.message for r in report.results if r.status == "stale"}
    for name in hand_edited(generated_dir):
        reasons.setdefault(name, HAND_EDITED)
    for name in report.diff.changed:  # a re-judged body can render to the same bytes, so both lists count
        reasons.setdefault(name, "")
    for name in report.diff.stale:
        reasons[name] = "no longer produced"
    return dict(sorted(reasons.items()))

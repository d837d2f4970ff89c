"""Runs the Array API conformance suite (data-apis/array-api-tests, the pinned snapshot in ../shared) against
`tensorsmith` and prints its pass/fail/skip counts and the share of the tests it does not skip that pass.

    python scripts/conformance.py [--max-examples N] [--suite DIR] [pytest arguments...]

The `linalg` and `fft` extensions are disabled (tensorsmith has neither), and conformance/skips.txt skips the
extensions' name checks, which the suite does not mark as extension tests. Known failures are listed, each with
its reason, in conformance/known_failures.txt, which the suite reads as its xfails file: they count as not
passing. Exit status 0 when no test fails beyond that list, 1 when one does, 2 when the suite is not found.
The suite is looked for in $ARRAY_API_TESTS_DIR, then ../shared/array-api-tests beside the repository, then
/work/shared/array-api-tests.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KNOWN_FAILURES = ROOT / "conformance" / "known_failures.txt"
SKIPS = ROOT / "conformance" / "skips.txt"
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|error|errors)")


def find_suite(given: str | None) -> Path | None:
    # the last: where this project's machines keep the pinned snapshot, for a clone made elsewhere (CI's)
    candidates = [given, os.environ.get("ARRAY_API_TESTS_DIR"), ROOT.parent / "shared" / "array-api-tests",
                  "/work/shared/array-api-tests"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "array_api_tests").is_dir():
            return Path(candidate).resolve()
    return None


def counts(output: str) -> dict[str, int]:
    """The numbers of pytest's last summary line ("1276 passed, 26 failed, 82 skipped in 21.0s")."""
    lines = [line for line in output.splitlines() if SUMMARY.search(line) and " in " in line]
    found = {kind: 0 for kind in ("passed", "failed", "skipped", "xfailed", "xpassed", "error")}
    for number, kind in SUMMARY.findall(lines[-1] if lines else ""):
        found["error" if kind == "errors" else kind] += int(number)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=20, help="hypothesis examples per test (default 20)")
    parser.add_argument("--suite", help="the array-api-tests checkout (default: $ARRAY_API_TESTS_DIR, ../shared)")
    args, extra = parser.parse_known_args(argv)
    suite = find_suite(args.suite)
    if suite is None:
        print("conformance: SKIPPED, the array-api-tests suite is not on this machine (set ARRAY_API_TESTS_DIR)")
        return 2
    env = {**os.environ, "ARRAY_API_TESTS_MODULE": "tensorsmith"}
    with tempfile.TemporaryDirectory(prefix="conformance-") as scratch:
        # hypothesis keeps its example database in the working directory: a scratch one, not the suite's folder
        command = [sys.executable, "-m", "pytest", str(suite / "array_api_tests"), "--rootdir", str(suite),
                   "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rfEX", "--max-examples", str(args.max_examples),
                   "--derandomize", "--disable-deadline", "--disable-extension", "linalg", "fft",
                   "--xfails-file", str(KNOWN_FAILURES), "--skips-file", str(SKIPS), *extra]  # fmt: skip
        print("conformance:", " ".join(command[2:]), flush=True)
        result = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
    output = result.stdout + result.stderr
    failures = [line for line in output.splitlines() if line.startswith(("FAILED", "ERROR", "XPASS"))]
    print("\n".join(failures[:200]))
    found = counts(output)
    ran = found["passed"] + found["failed"] + found["xfailed"] + found["xpassed"] + found["error"]
    share = 100.0 * found["passed"] / ran if ran else 0.0
    print(f"conformance: {found['passed']} passed, {found['failed']} failed, {found['xfailed']} known failures "
          f"(conformance/known_failures.txt), {found['xpassed']} known failures that passed, {found['error']} errors, "
          f"{found['skipped']} skipped; {share:.1f} % of the {ran} tests not skipped pass")  # fmt: skip
    if not ran:
        print(output[-4000:])
        return 1
    return 0 if found["failed"] == 0 and found["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

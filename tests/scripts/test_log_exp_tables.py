"""runtime/include/tensorsmith/log_exp_tables.h holds exactly what scripts/log_exp_tables.py computes (mpmath at
200 bits), and its values hold what float64 pow's accuracy rests on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mpmath

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import log_exp_tables  # noqa: E402


def test_header_is_what_the_script_writes() -> None:
    script = ROOT / "scripts" / "log_exp_tables.py"
    run = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_log_table_covers_every_interval_within_its_bound() -> None:
    # For each interval of z in [sqrt(1/2), sqrt(2)), |z c - 1| stays below 2**-8 at both ends (log(1 + r)'s series
    # is cut for that bound), c is 1 where the interval holds 1, and -log(c) is carried to about 106 bits.
    # (The header holds these rows: test_header_is_what_the_script_writes.)
    mpmath.mp.prec = 200  # as render() computes them
    rows = log_exp_tables._log_rows()
    assert len(rows) == 128
    step = 1 << (52 - log_exp_tables.LOG_INDEX_BITS)
    for i, (c, hi, lo) in enumerate(rows):
        low = log_exp_tables._double(log_exp_tables.SQRT_HALF_BITS + i * step)
        high = log_exp_tables._double(log_exp_tables.SQRT_HALF_BITS + (i + 1) * step) if i < 127 else 2**0.5
        assert max(abs(low * c - 1), abs(high * c - 1)) < 2.0**-8, i
        assert (c == 1.0) == (low <= 1.0 < high), i
        exact = -mpmath.log(mpmath.mpf(c))
        pair = mpmath.mpf(hi) + mpmath.mpf(lo)
        assert abs(pair - exact) <= abs(exact) * 2.0**-104, i

#!/usr/bin/env bash
# The GPU check: scripts/device_check.py says what it runs and how each step is bounded. The python3 on PATH
# (on the GPU machine: its image's) runs it; PYTHON=... picks another.
#
#   scripts/device_check.sh [OUT_DIR]      on a GPU machine (default OUT_DIR: build/device-check)
#   scripts/device_check.sh --preflight    on any machine: everything but the GPU
#   scripts/device_check.sh --plan         the steps, their timeouts and the budget
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/device_check.py "$@"

#!/usr/bin/env bash
# One prepared check for a lent GPU machine (torch, transformers and accelerate there; no vLLM,
# no network): install the project from the wheelhouse build/wheelhouse/
# (benchmarks/build_wheelhouse.sh, under the 64 MiB a device call carries), build the tiny
# model, run the hf backend on the GPU (vllm-local / vllm serve too where vLLM is installed),
# print calls/s and outcome counts. Bounded at 5 minutes. Writes nothing in the checkout: the
# wheelhouse under build/ (ignored by git), the run's files under /tmp.
#   benchmarks/device_check.sh --dry-run   # here: build the wheelhouse, check its size
#   benchmarks/device_check.sh             # there: run with carry ["build/wheelhouse"]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--dry-run" ]; then
    exec benchmarks/build_wheelhouse.sh
fi
PY="${PYTHON:-python3}"
wheels=build/wheelhouse
[ -d "$wheels" ] || { echo "device_check: no $wheels/ here: run benchmarks/build_wheelhouse.sh and carry $wheels" >&2; exit 2; }
# the project and what the machine lacks, nothing else: what it has stays as it is
"$PY" -m pip install -q --no-index --find-links "$wheels" --no-cache-dir \
    --disable-pip-version-check "$wheels"/unseen-*.whl
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false PYTHONDONTWRITEBYTECODE=1
cd /tmp  # the installed package, not the working tree
timeout 300 "$PY" "$OLDPWD/benchmarks/device_check.py" "$@"

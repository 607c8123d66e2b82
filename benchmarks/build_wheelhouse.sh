#!/usr/bin/env bash
# Wheels for the device check (benchmarks/device_check.sh): the project's own wheel and every
# dependency the lent GPU machine lacks (benchmarks/device_packages.txt lists what it has),
# for its Python 3.12 on x86-64, into build/wheelhouse/ (build/ is ignored by git; carry it
# with the device tool). The wheel is built from a copy of the checkout's files in a
# temporary folder, so nothing but the wheelhouse is written here. The total must stay under
# 64 MiB, the most a device call carries: it says so and fails otherwise.
# Usage: benchmarks/build_wheelhouse.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-build/wheelhouse}")"
limit=$((64 * 1024 * 1024))
rm -rf "$out" && mkdir -p "$out"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
# the files git tracks or would track (new ones too), not what is ignored (.venv, runs, build)
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src" 2>/dev/null || true
(cd "$src" && python -m pip wheel --quiet --no-deps -w "$out" . >/dev/null)
have=$(grep -v '^#' benchmarks/device_packages.txt | tr ' ' '\n' | sed '/^$/d')
# the dependency closure, resolved for the device's interpreter; what it has is dropped after
python -m pip download --quiet --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d "$src/all" "$out"/unseen-*.whl
for whl in "$src"/all/*.whl; do
    name=$(basename "$whl" | cut -d- -f1 | tr '_A-Z' '-a-z')
    if ! grep -qx "$name" <<<"$have"; then mv "$whl" "$out/"; fi
done
size=$(du -cb "$out"/*.whl | tail -1 | cut -f1)
printf 'wheelhouse %s: %d wheels, %.1f MiB (limit 64 MiB)\n' "$out" "$(ls "$out"/*.whl | wc -l)" \
    "$(echo "$size / 1048576" | bc -l)"
if [ "$size" -ge "$limit" ]; then echo "wheelhouse over 64 MiB: carry less" >&2; exit 1; fi

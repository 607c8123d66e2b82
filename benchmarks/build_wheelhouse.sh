#!/usr/bin/env bash
# Wheels for the device check (benchmarks/device_check.sh): the project's own wheel and every
# dependency the lent GPU machine lacks (benchmarks/device_packages.txt lists what it has),
# for its Python 3.12 on x86-64, into .whl/ (ignored by git, carried by the device tool).
# The total must stay under 64 MiB, the most a device call carries: it says so and fails
# otherwise. Usage: benchmarks/build_wheelhouse.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.whl}"
limit=$((64 * 1024 * 1024))
rm -rf "$out" && mkdir -p "$out"
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> "$(git rev-parse --git-path info/exclude)"
python -m pip wheel --quiet --no-deps -w "$out" . >/dev/null
have=$(grep -v '^#' benchmarks/device_packages.txt | tr ' ' '\n' | sed '/^$/d')
# the dependency closure, resolved for the device's interpreter; what it has is dropped after
python -m pip download --quiet --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d "$out/all" "$out"/unseen-*.whl
for whl in "$out"/all/*.whl; do
    name=$(basename "$whl" | cut -d- -f1 | tr '_A-Z' '-a-z')
    if ! grep -qx "$name" <<<"$have"; then mv "$whl" "$out/"; fi
done
rm -rf "$out/all"
size=$(du -cb "$out"/*.whl | tail -1 | cut -f1)
printf 'wheelhouse %s: %d wheels, %.1f MiB (limit 64 MiB)\n' "$out" "$(ls "$out"/*.whl | wc -l)" \
    "$(echo "$size / 1048576" | bc -l)"
if [ "$size" -ge "$limit" ]; then echo "wheelhouse over 64 MiB: carry less" >&2; exit 1; fi

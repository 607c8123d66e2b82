"""benchmarks/device_check.sh and build_wheelhouse.sh write nothing in the checkout but the
wheelhouse under build/ (ignored by git): run in a copy of their folder in a fresh git
repository, with ``python`` a stand-in for pip that writes fake wheels."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# `python -m pip wheel ... -w OUT .` writes the project's wheel and notes where it ran;
# `python -m pip download ... -d OUT` writes a dependency the device has and one it lacks
FAKE_PIP = r"""#!/usr/bin/env bash
prev=""; out=""
for a in "$@"; do
    if [ "$prev" = "-w" ] || [ "$prev" = "-d" ]; then out="$a"; fi
    prev="$a"
done
mkdir -p "$out"
if [ "$3" = "wheel" ]; then
    head -c 2048 /dev/zero > "$out/unseen-0.1-py3-none-any.whl"; pwd > "$BUILT_IN"
else
    head -c 1024 /dev/zero > "$out/numpy-2.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    head -c 1024 /dev/zero > "$out/langgraph-1.0-py3-none-any.whl"
fi
"""


@pytest.fixture
def checkout(tmp_path):
    if not shutil.which("git") or not shutil.which("bc"):
        pytest.skip("needs git and bc")
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    for name in ("build_wheelhouse.sh", "device_check.sh", "device_packages.txt"):
        shutil.copy2(ROOT / "benchmarks" / name, repo / "benchmarks" / name)
    shutil.copy2(ROOT / ".gitignore", repo / ".gitignore")
    (repo / "pyproject.toml").write_text("[project]\nname = 'unseen'\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=repo, check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(FAKE_PIP)
    (bin_dir / "python").chmod(0o755)
    return repo, bin_dir


def _status(repo: Path) -> tuple[str, str, str]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                              check=True).stdout
    return (git("status", "--porcelain", "--untracked-files=all"),
            git("status", "--porcelain", "--ignored"),
            (repo / ".git" / "info" / "exclude").read_text())


def test_dry_run_writes_only_the_wheelhouse_under_build(checkout, tmp_path):
    repo, bin_dir = checkout
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "BUILT_IN": str(tmp_path / "built-in")}
    proc = subprocess.run(["bash", "benchmarks/device_check.sh", "--dry-run"], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    wheels = sorted(p.name for p in (repo / "build" / "wheelhouse").iterdir())
    # the project and what the device lacks; numpy is on the device (device_packages.txt)
    assert wheels == ["langgraph-1.0-py3-none-any.whl", "unseen-0.1-py3-none-any.whl"]
    assert proc.stdout.startswith(f"wheelhouse {repo}/build/wheelhouse: 2 wheels, 0.0 MiB")
    untracked, ignored, after = _status(repo)
    assert untracked == "" and ignored == "!! build/\n"  # nothing else, ignored or not
    assert after == exclude  # .git/info/exclude untouched
    built_in = Path((tmp_path / "built-in").read_text().strip())
    assert repo not in built_in.parents and built_in != repo  # the wheel built in a copy


def test_without_a_wheelhouse_one_line_and_exit_2(checkout):
    repo, bin_dir = checkout
    proc = subprocess.run(["bash", "benchmarks/device_check.sh"], cwd=repo,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("device_check: no build/wheelhouse/ here: run "
                           "benchmarks/build_wheelhouse.sh and carry build/wheelhouse\n")
    assert _status(repo)[1] == ""

#!/usr/bin/env bash
# Write requirements.lock: the exact versions of everything `.[grader,dev]` needs, for every
# platform (a universal resolution), the ones CI tests. Extra arguments go to `uv pip compile`:
#   scripts/lock.sh                        keep every locked version that still fits pyproject.toml
#   scripts/lock.sh --upgrade-package rich one package to its newest allowed release
#   scripts/lock.sh --upgrade              everything to its newest allowed release
# torch itself is left out (scripts/setup.sh installs its CPU build first), but the lock is
# resolved against that CPU build's metadata: PyPI's torch would bring CUDA packages (nvidia-*,
# triton) into the lock, and pip would then download them. Where PIP_FIND_LINKS has the CPU wheel
# (these machines), uv reads it there; elsewhere uv's --torch-backend cpu fetches it.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH=2.13.0  # keep equal to scripts/setup.sh and environment.yml (tests/test_dependencies.py)

python="${VIRTUAL_ENV:-.venv}/bin/python"
pin="$(mktemp)"
trap 'rm -f "$pin"' EXIT
echo "torch==$TORCH+cpu" > "$pin"
if ls ${PIP_FIND_LINKS:-/nonexistent}/torch-"$TORCH"+cpu-*.whl >/dev/null 2>&1; then
  torch_source=(--find-links "$PIP_FIND_LINKS")
else
  torch_source=(--torch-backend cpu)
fi
"$python" -m uv pip compile pyproject.toml --extra grader --extra dev \
  --universal --python-version 3.11 --constraint "$pin" "${torch_source[@]}" \
  --no-emit-package torch --custom-compile-command "scripts/lock.sh" \
  --output-file requirements.lock --quiet "$@"
if grep -qiE '^(nvidia-|triton|cuda-)' requirements.lock; then
  echo "requirements.lock names CUDA packages: torch was not resolved as its CPU build" >&2
  exit 1
fi
echo "requirements.lock: $(grep -c '==' requirements.lock) packages"

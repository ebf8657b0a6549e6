#!/usr/bin/env bash
# Are pyproject.toml's floors true? Installs Hooklab with its `grader` extra into .venv-floors/,
# every dependency held at the lowest version pyproject.toml admits (scripts/floors.py; the
# packages they pull in at their newest, as pip would give them; the dev tools unconstrained), and
# runs there the tests of the engine (the named submissions' golden scores), its speed-ups and the
# notebooks. Then the self-study test with the student install's own floors (IPython's is lower
# than the grader's). `make floors`, and `.ci/run` after the main suite; arguments go to
# the first pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${HOOKLAB_PYTHON:-/usr/bin/python3.11}"
command -v "$python" >/dev/null || python=python3
venv=.venv-floors
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

started=$SECONDS
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
constraints="$venv/floors.txt"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check packaging
"$venv/bin/python" scripts/floors.py grader > "$constraints"
stamp="$venv/.hooklab-floors"
wanted="$(sha256sum "$constraints" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "Installing the floors ($(wc -l < "$constraints") dependencies at their lowest) ..."
  "${pip[@]}" install --quiet "torch==$(grep '^torch==' "$constraints" | cut -d= -f3)"
  "${pip[@]}" install --quiet -c "$constraints" -e ".[grader,dev]"
  "${pip[@]}" check
  echo "$wanted" > "$stamp"
fi
"$venv/bin/python" -m compileall -q autograder
echo "Floors installed in $((SECONDS - started)) s:"
"${pip[@]}" freeze --exclude-editable | grep -iE "^($(cut -d= -f1 "$constraints" | paste -sd'|'))==" \
  | paste -sd' '

# What the floors can break: the speed-ups' replaced internals, the engine end to end (the golden
# scores of every named submission, sandboxed), the notebooks in a plain kernel.
"$venv/bin/python" -m pytest -p no:cacheprovider -n 2 -m "not browser" \
  tests/grade/test_engine.py tests/grade/speedups tests/course/test_notebooks.py "$@"
echo "Grading stack's floors checked in $((SECONDS - started)) s"

# The runner is the project's environment (it has nbclient); the student's venv is the test's.
student_floors="$venv/student-floors.txt"
"$venv/bin/python" scripts/floors.py > "$student_floors"
HOOKLAB_SELFSTUDY_CONSTRAINTS="$PWD/$student_floors" "${PYTHON:-.venv/bin/python}" -m pytest \
  -p no:cacheprovider -n 0 -s -m selfstudy tests/course/test_selfstudy.py
echo "Floors checked in $((SECONDS - started)) s"

# The two commands of the README, and the few chores around them. Each target sets up first.
PYTHON := $(shell if [ -n "$$VIRTUAL_ENV" ]; then echo "$$VIRTUAL_ENV/bin/python"; \
	elif [ -n "$$CONDA_PREFIX" ] && [ "$${CONDA_DEFAULT_ENV:-base}" != base ]; then \
	echo "$$CONDA_PREFIX/bin/python"; else echo .venv/bin/python; fi)

.PHONY: setup demo test build lab bench

setup:
	@bash scripts/setup.sh

demo: setup  ## build the student notebooks, grade the sample class, print the table
	$(PYTHON) -m autograder demo

test: setup  ## lint and the whole test suite
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m pytest

build: setup  ## regenerate notebooks/ from solutions/ after editing a solution notebook
	$(PYTHON) -m autograder build

lab: setup  ## open the student notebooks in JupyterLab
	$(PYTHON) -m jupyter lab notebooks/

bench: setup  ## time `hooklab autograde` against stock nbgrader autograde on 12 students; compare scores
	$(PYTHON) -m autograder.bench

# The two commands of the README, and the few chores around them. Each target sets up first.
PYTHON := $(shell if [ -n "$$VIRTUAL_ENV" ]; then echo "$$VIRTUAL_ENV/bin/python"; \
	elif [ -n "$$CONDA_PREFIX" ] && [ "$${CONDA_DEFAULT_ENV:-base}" != base ]; then \
	echo "$$CONDA_PREFIX/bin/python"; else echo .venv/bin/python; fi)

.PHONY: setup demo test floors lock build lab bench messages site

setup:
	@bash scripts/setup.sh

demo: setup  ## build the student notebooks, grade the sample class, print the table
	$(PYTHON) -m autograder demo

test: setup  ## lint, the whole test suite, then the student install from the wheel (prints its cost)
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m pytest -m "not selfstudy"
	$(PYTHON) -m pytest -m selfstudy -n 0 -s tests/course/test_selfstudy.py

floors: setup  ## the engine's and the notebooks' tests with every dependency at its lowest allowed version
	PYTHON=$(PYTHON) bash scripts/check_floors.sh

lock: setup  ## rewrite requirements.lock after a change of pyproject.toml (docs/dependencies.md)
	bash scripts/lock.sh

build: setup  ## regenerate notebooks/ from solutions/, and ko/ (with translations/ko/), after editing a solution notebook
	$(PYTHON) -m autograder build

site: setup  ## the walkthrough site: the solution notebooks executed, hidden tests removed, in site/
	$(PYTHON) scripts/site.py site

lab: setup  ## open the student notebooks in JupyterLab
	$(PYTHON) -m jupyter lab notebooks/

bench: setup  ## time `hooklab autograde` against stock nbgrader autograde on 12 students; compare scores
	$(PYTHON) -m autograder.bench

messages: setup  ## re-extract the messages of autograder/, update each language's .po, compile its .mo
	$(PYTHON) scripts/messages.py

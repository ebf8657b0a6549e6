"""`python -m autograder` runs the hooklab command line."""

from autograder.cli import run

run()

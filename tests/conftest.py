"""Shared test set-up: nbgrader's gradebook needs this environment's tools on PATH."""

from autograder import course

course.use_environment_bin()

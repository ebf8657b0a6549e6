"""Shared test set-up: nbgrader's gradebook needs this environment's tools on PATH; the longest
test file is collected first."""

from autograder import course

course.use_environment_bin()

# The stock nbgrader round trip grades ~90 notebooks (~6 min), nbgrader's own autograde suite
# runs ~60 autograde commands (~9 min). pytest-xdist hands out whole files in collection order:
# collected in its alphabetical place, a long file started near the end and the other worker sat
# idle while it finished.
LONGEST_FIRST = ("test_nbgrader_roundtrip.py", "test_nbgrader_suite.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable: the rest keep order

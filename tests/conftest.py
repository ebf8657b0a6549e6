"""Shared test set-up: nbgrader's gradebook needs this environment's tools on PATH; the longest
test file is collected first."""

from autograder import course

course.use_environment_bin()

# The stock nbgrader round trip grades ~90 notebooks (~6 min). pytest-xdist hands out whole files
# in collection order: collected in its alphabetical place, it started near the end and the other
# worker sat idle while it finished.
LONGEST_FIRST = "test_nbgrader_roundtrip.py"


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name != LONGEST_FIRST)  # stable: the rest keep order

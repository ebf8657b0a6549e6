"""nbgrader's own tests of its autograde app (vendor/nbgrader/tests/apps/test_nbgrader_autograde.py),
collected here with nbgrader's fixtures; conftest.py, which makes vendor/ the package
nbgrader.tests, sends their autograde runs to `hooklab autograde` or to stock nbgrader
(HOOKLAB_NBGRADER_SUITE)."""

import pytest
from nbgrader.tests.apps.test_nbgrader_autograde import TestNbGraderAutograde

pytestmark = [pytest.mark.nbgrader, pytest.mark.nbgrader_suite]

__all__ = ["TestNbGraderAutograde"]

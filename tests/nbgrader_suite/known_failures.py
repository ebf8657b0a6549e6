"""nbgrader's autograde tests that `hooklab autograde` fails today, each with what it lacks: in
hooklab mode they are strict xfails (conftest.py), so a test that starts passing fails until
its entry is removed. The evidence is in ANALYSIS.md."""

KNOWN_FAILURES: dict[str, str] = {}

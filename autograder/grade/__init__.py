"""Grading a class: `hooklab autograde`, a parallel, warm-kernel drop-in for `nbgrader autograde`.

The tree follows a submission: run.py and preflight.py (the command), grader/ (the grading
process), worker/ (one notebook), kernels/ and sandbox/ (where student code runs), verifier/
(the trusted judgement) and speedups/ (replacements of third-party internals)."""

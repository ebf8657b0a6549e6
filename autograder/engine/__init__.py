"""The grading engine: a parallel, warm-kernel drop-in for `nbgrader autograde`."""

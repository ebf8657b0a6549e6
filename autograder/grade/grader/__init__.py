"""The grading process: staging, nbgrader's bookkeeping and the gradebook writes."""

"""The grading workers: sanitize, execute, verify and score one notebook."""

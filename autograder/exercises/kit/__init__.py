"""What every exercise module uses: the student's namespace, comparisons, evidence and judges."""

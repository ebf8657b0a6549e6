"""Kernels: the torch-loaded template, the kernels it forks, and the grader's side of them."""

"""The instructor's reports: score tables in the terminal, a grades CSV, a CSV of every
submission's flags and failure reasons, and an HTML report of scores, common mistakes and flags."""

from autograder.reports.class_report import write_class_report
from autograder.reports.grades_csv import write_flags_csv, write_grades_csv
from autograder.reports.table import print_tables

__all__ = ["print_tables", "write_class_report", "write_flags_csv", "write_grades_csv"]

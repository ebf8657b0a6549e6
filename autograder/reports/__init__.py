"""The instructor's reports: score tables in the terminal, a grades CSV, and an HTML report of
scores and common mistakes."""

from autograder.reports.class_report import write_class_report
from autograder.reports.grades_csv import write_grades_csv
from autograder.reports.table import print_tables

__all__ = ["print_tables", "write_class_report", "write_grades_csv"]

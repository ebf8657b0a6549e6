"""The instructor's class reports: a grades CSV and an HTML report of scores and common mistakes."""

from autograder.reports.class_report import write_class_report
from autograder.reports.grades_csv import write_grades_csv

__all__ = ["write_class_report", "write_grades_csv"]

"""The benchmark's mix of submissions, its score comparison and its last line."""

import json
import re

import pytest
from nbgrader.api import Gradebook

from autograder import bench

LAST_LINE = re.compile(
    r"speedup: \d+\.\dx \(stock \d+\.\d s, ours \d+\.\d s, identical scores: (yes|no), "
    r"peak worker RSS \d+ MB(, speed-ups off)?\)"
)


def test_the_mix_is_deterministic_and_varied():
    cases = [bench.case_for(i, "forward_hooks") for i in range(12)]
    assert cases == [bench.case_for(i, "forward_hooks") for i in range(12)]
    assert {"all_correct", "seed001_answers", "blank"} <= set(cases)
    assert len(set(cases)) >= 6  # some partly wrong cases too
    assert bench.student_ids(12)[0] == "s01" and bench.student_ids(12)[-1] == "s12"


def test_a_missing_case_is_the_blank_notebook():
    assert bench.answers("forward_hooks", "seed000_answers") == ""
    assert bench.answers("forward_hooks", "all_correct")


def test_differences_reports_changed_and_missing_cells():
    first = {("a", "s01", "x_test"): (1.0, 1.0), ("a", "s01", "y_test"): (0.0, 2.0)}
    assert bench.differences(first, dict(first)) == []
    second = {("a", "s01", "x_test"): (0.0, 1.0)}
    assert bench.differences(first, second) == [
        "a/s01/x_test: stock (1.0, 1.0), ours (0.0, 1.0)",
        "a/s01/y_test: stock (0.0, 2.0), ours missing",
    ]


def test_our_runs_are_spread_from_before_stocks_first_assignment_to_after_its_last():
    assert bench.run_slots(3, 5) == [0, 2, 5]
    assert bench.run_slots(6, 5) == [0, 1, 2, 3, 4, 5]
    assert bench.run_slots(2, 1) == [0, 1]
    assert bench.run_slots(1, 5) == [2]  # a single run: in the middle
    assert bench.run_slots(7, 5) == sorted(bench.run_slots(7, 5))


def test_last_line_format():
    line = bench.last_line(30.04, 9.96, True, 412.6)
    assert line == (
        "speedup: 3.0x (stock 30.0 s, ours 10.0 s, identical scores: yes, peak worker RSS 413 MB)"
    )
    assert LAST_LINE.fullmatch(bench.last_line(1.0, 2.0, False, 0.0))
    off = bench.last_line(30.04, 9.96, True, 412.6, speedups="off")
    assert off.endswith("peak worker RSS 413 MB, speed-ups off)") and LAST_LINE.fullmatch(off)


@pytest.mark.nbgrader
@pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")
def test_tiny_benchmark_agrees_and_a_changed_grade_is_caught(tmp_path, capsys):
    names = ["module_apply"]
    line, identical = bench.bench(tmp_path, students=2, jobs=1, assignments=names, runs=2)
    printed = capsys.readouterr().out
    assert identical, printed
    assert LAST_LINE.fullmatch(line) and "identical scores: yes" in line
    runs = [
        float(s)
        for s in re.findall(r"^  run \d: (\d+\.\d) s; 0 of \d+ cells differ$", printed, re.M)
    ]
    assert len(runs) == 2  # two runs, each compared with stock
    # Spread over stock's run: one before its (only) assignment, one after it.
    order = re.findall(r"^  (ours: run \d|stock: module_apply) took", printed, re.M)
    assert order == ["ours: run 1", "stock: module_apply", "ours: run 2"], printed
    ours = float(re.search(r"ours (\d+\.\d) s", line).group(1))
    assert abs(ours - sum(runs) / 2) <= 0.06  # the median of two
    # The kernels' memory counts, though wait4 does not see them inside bubblewrap.
    kernels = json.loads((tmp_path / "ours-summary.json").read_text())["peak_kernel_rss_mb"]
    assert float(re.search(r"peak worker RSS (\d+) MB", line).group(1)) >= round(kernels) > 0
    stock_url, ours_url = (f"sqlite:///{tmp_path / name}" for name in ("stock.db", "ours-2.db"))
    stock = bench.all_scores(stock_url, names)
    assert {student for _, student, _ in stock} == {"s01", "s02"}
    assert bench.differences(stock, bench.all_scores(ours_url, names)) == []

    key = next(k for k, (score, _) in sorted(stock.items()) if score > 0)
    assignment, student, grade_id = key
    with Gradebook(ours_url) as book:
        book.find_grade(grade_id, assignment, assignment, student).manual_score = 0.0
        book.db.commit()
    diffs = bench.differences(stock, bench.all_scores(ours_url, names))
    assert len(diffs) == 1 and diffs[0].startswith(f"{assignment}/{student}/{grade_id}: ")

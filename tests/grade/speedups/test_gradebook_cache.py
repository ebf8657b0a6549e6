"""autograder/grade/speedups/gradebook.py: nbgrader's Gradebook, opened many times in the grading
process, reuses one engine per database URL and checks each course's row once."""

from __future__ import annotations

import re

from nbgrader import api
from sqlalchemy import event

from autograder.grade.speedups import gradebook as gradebook_cache


def _course_statements(engine, seen: list[str]) -> None:
    def record(connection, cursor, statement, *args) -> None:
        if re.search(r"\b(FROM|INTO) course\b", statement):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)


def test_later_opens_of_a_gradebook_skip_the_course_check_a_new_course_is_still_made(tmp_path):
    gradebook_cache.install()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with api.Gradebook(url, "hooks") as gradebook:  # the first open: nbgrader's own, in full
        gradebook.add_assignment("forward_hooks")
        engine = gradebook.engine
    course_queries: list[str] = []
    _course_statements(engine, course_queries)
    for _ in range(3):
        with api.Gradebook(url, "hooks") as gradebook:
            assert gradebook.engine is engine
            assert gradebook.find_assignment("forward_hooks").course_id == "hooks"
    assert course_queries == []
    with api.Gradebook(url, "another course") as gradebook:
        gradebook.add_assignment("backward_hooks")
    with api.Gradebook(url, "another course") as gradebook:
        pass
    assert [q.split()[0] for q in course_queries] == ["SELECT", "INSERT"]  # checked, made, once
    gradebook_cache.forget(url)
    with api.Gradebook(url, "hooks") as gradebook:  # a new engine checks again, as nbgrader does
        courses = {course.id for course in gradebook.db.query(api.Course)}
        assignments = {(a.name, a.course_id) for a in gradebook.assignments}
    assert courses == {"hooks", "another course"}
    assert assignments == {("forward_hooks", "hooks"), ("backward_hooks", "another course")}

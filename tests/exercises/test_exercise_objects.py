"""exercise_objects without a kernel: what a cell of each kind does to the notebook's names."""

from __future__ import annotations

from autograder.exercises.kit.exercise_objects import ExerciseObjects


def ran(objects: ExerciseObjects, cell_id: str | None, **bound: object) -> None:
    """A cell with id `cell_id` that binds `bound`, as IPython's events surround it."""
    objects.before_cell(cell_id)
    objects.namespace.update(bound)
    objects.after_cell()


def test_a_cell_of_an_exercise_gets_back_the_names_another_exercise_rebound():
    first, second = object(), object()
    objects = ExerciseObjects({}, ["forward_add5", "pre_hook_replace"])
    ran(objects, "forward_add5", add=first, hook=first)
    ran(objects, "pre_hook_replace_run", add=second)
    assert objects.namespace["add"] is second
    objects.before_cell("forward_add5_test")
    assert objects.namespace["add"] is first
    objects.after_cell()
    objects.before_cell("pre_hook_replace_test")
    assert objects.namespace["add"] is second


def test_names_bound_elsewhere_are_left_as_they_are():
    first, scratch, later = object(), object(), object()
    objects = ExerciseObjects({}, ["forward_add5", "pre_hook_replace"])
    ran(objects, "forward_add5", add=first)
    ran(objects, "3f0c2d9a", add=scratch)  # a cell the student added
    objects.before_cell("forward_add5_test")
    assert objects.namespace["add"] is scratch
    objects.after_cell()
    ran(objects, "pre_hook_replace", add=later)
    objects.before_cell(None)  # a front end that sends no cell id (Colab)
    assert objects.namespace["add"] is later
    objects.after_cell()
    objects.before_cell("forward_add5_helpers")  # not one of the exercise's cells
    assert objects.namespace["add"] is later


def test_ipython_names_are_not_followed():
    objects = ExerciseObjects({}, ["forward_add5", "pre_hook_replace"])
    ran(objects, "forward_add5", _="one", _i3="x = 1", Out={})
    assert objects.own.get("forward_add5", {}) == {}


def test_an_answer_cell_goes_on_with_the_globals_as_they_are():
    """module_apply's Exercise 5 answer cell starts from Exercise 3's `model` as it is now."""
    stale, newer = object(), object()
    objects = ExerciseObjects({}, ["apply_add_bias", "apply_linear"])
    ran(objects, "apply_linear_run", model=stale)
    ran(objects, "apply_add_bias", model=newer)
    for cell_id in ("apply_linear_setup", "apply_linear"):
        objects.before_cell(cell_id)
        assert objects.namespace["model"] is newer, cell_id
        objects.after_cell()

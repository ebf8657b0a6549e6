"""Are the notebooks what the project promises: reviewable JSON, no leaks, every grade id wired up,
runnable top to bottom in a real kernel?"""

import re

import nbformat
import pytest
import torch
from nbclient import NotebookClient
from notebook_runner import run_notebook

from autograder import NotDoneYet, course, notebooks
from autograder.exercises.forward_hooks.models import make_add, make_mlp
from autograder.exercises.kit import registry

ASSIGNMENTS = course.assignments()
SEED_COURSE_IDS = {
    "forward_collect",
    "forward_add5",
    "backward_collect",
    "tensor_hook_W",
    "backward_normalize",
    "apply_init_ones",
    "apply_add_bias",
    "apply_init_bias",
    "apply_linear",
}
SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)
HIDDEN_REGION = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.DOTALL)


def read(folder, assignment):
    return notebooks.read(course.notebook_path(folder, assignment))


def nbgrader_meta(cell):
    return cell.metadata.get("nbgrader", {})


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_notebooks_are_stored_without_outputs_and_with_stable_ids(folder, assignment):
    path = course.notebook_path(folder, assignment)
    nb = notebooks.read(path)
    nbformat.validate(nb)
    ids = [cell.id for cell in nb.cells]
    assert len(ids) == len(set(ids)), "duplicate cell ids"
    for cell in nb.cells:
        if nbgrader_meta(cell):
            assert cell.id == nbgrader_meta(cell)["grade_id"], "cell id must be its grade id"
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    if folder == "solutions":
        assert path.read_text(encoding="utf-8") == notebooks.canonical(nb), "not canonical JSON"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_leaks_no_solution_or_hidden_test(assignment):
    source, student = read("solutions", assignment), read("notebooks", assignment)
    student_text = "\n".join(cell.source for cell in student.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in student_text
    student_code = "\n".join(c.source for c in student.cells if c.cell_type == "code")
    # A line counts as secret when the source notebook has it only inside a removed region.
    public = "\n".join(
        HIDDEN_REGION.sub("", SOLUTION_REGION.sub("", cell.source)) for cell in source.cells
    )
    for cell in source.cells:
        for region in SOLUTION_REGION.findall(cell.source) + HIDDEN_REGION.findall(cell.source):
            for line in map(str.strip, region.splitlines()):
                if line and not line.startswith("#") and line not in public:
                    assert line not in student_code, f"leaked from {cell.id}: {line}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_graded_cell_is_wired_to_a_registered_check(assignment):
    nb = read("solutions", assignment)
    solution_ids = {cell.id for cell in nb.cells if nbgrader_meta(cell).get("solution")}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if not meta.get("grade"):
            continue
        exercise, _, kind = cell.id.rpartition("_")
        assert kind in {"test", "hidden"} and exercise in solution_ids, cell.id
        hidden = kind == "hidden"
        assert f'check("{exercise}", globals(){", hidden=True" if hidden else ""})' in cell.source
        assert has_check(exercise, hidden), cell.id
        assert meta["points"] > 0


def has_check(exercise: str, hidden: bool) -> bool:
    """Whether the exercise module has the (visible or hidden) check its test cell calls."""
    if not registry.notebook_of(exercise):
        return False
    return hasattr(registry.exercise(exercise), "hidden" if hidden else "visible")


def test_the_seed_course_tasks_all_have_their_grade_ids():
    ids = set()
    for assignment in ASSIGNMENTS:
        ids |= {cell.id for cell in read("solutions", assignment).cells}
    missing = SEED_COURSE_IDS - ids
    assert not missing, f"course tasks without a solution cell: {missing}"
    for task in SEED_COURSE_IDS:
        assert f"{task}_test" in ids and f"{task}_hidden" in ids


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_notebook_passes_every_check_without_warnings(assignment):
    run = run_notebook(assignment, solutions=True)
    assert run.errors == {}
    graded = [c.id for c in read("solutions", assignment).cells if nbgrader_meta(c).get("grade")]
    assert sorted(run.results) == sorted(graded)
    assert all(error is None for error in run.results.values()), run.results
    assert "warnings while your code ran" not in run.stdout


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_says_not_done_yet_everywhere(assignment):
    run = run_notebook(assignment)
    assert run.results
    for cell_id, error in run.results.items():
        assert isinstance(error, NotDoneYet), f"{cell_id}: {error!r}"


def test_forward_notebook_classes_behave_like_the_checkers_copies():
    run = run_notebook("forward_hooks", solutions=True)
    x1, x2 = torch.rand(3), torch.rand(3)
    assert torch.equal(run["Add"]()(x1, x2), make_add()(x1, x2))
    notebook_net, reference = run["Net"](100, 200, 10), make_mlp(100, 200, 10)
    reference.load_state_dict(notebook_net.state_dict())
    x = torch.rand(4, 100)
    assert torch.equal(notebook_net(x), reference(x))


@pytest.mark.nbgrader
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_notebook_runs_top_to_bottom_in_a_kernel(assignment):
    nb = read("solutions", assignment)
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output.output_type != "error", f"{cell.id}: {output.get('evalue')}"
            assert output.get("name") != "stderr", f"{cell.id} wrote to stderr: {output.text}"

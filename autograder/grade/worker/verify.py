"""The trusted step around execution: the notebook sent to a verifier before, verdicts after.

It runs in the grading worker, a process the student's code never runs in. Before execution,
`Guard.prepare` sends a verifier (verifier/host.py, forked by the kernel template and kept for
the worker's next notebook: the worker never imports torch) what it needs to run each
registered exercise's answer cell on its own, with seeds derived from the course secret, the
student, the assignment and the grade id (unknown to the notebook, the same on every regrade);
it keeps the exercises' hidden test cells from the kernel and records each cell's execute_reply
status. After execution, `Guard.verify` gives each graded test cell its trusted verdict, and
replaces the outputs of a cell that fails it with an error output carrying the reason, so
nbgrader's own scoring gives it zero and its feedback shows why:

* a hidden cell gets the verifier's verdict as its output;
* a visible cell that passed in the kernel keeps its points only if the verifier agrees;
* a cell that never ran (the kernel exited or died first), or whose kernel reply says it raised
  while its error output is gone (a custom exception handler, cleared output), gets zero;
* an exercise whose answer cell the static scan (scan.py) finds tampering in gets zero.

Test cells of other courses (no registered exercise) keep nbgrader's own scoring, with the
same zero for a cell that did not run or hid its error. The secrets no output may show (the
hidden cells' lines) are for hygiene.py to scrub. The flags also go to the notebook's metadata
(`hooklab.flags`), from which the batch reads them for the submission's message. The flags are
for the instructor, in English; what the student reads in the notebook is in the notebook's
language (its edition's metadata), whatever this process's is.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import nbformat

from autograder.exercises.kit import registry
from autograder.grade.verifier.client import VerifierFailed
from autograder.grade.verifier.protocol import Verdict
from autograder.grade.verifier.request import build_request, exercises_in
from autograder.grade.worker import hygiene, verdict_cache
from autograder.grade.worker.scan import UNPARSABLE, Finding, scan_source
from autograder.i18n import N_, Phrase, notebook_language, render, translator

FLAG = "tampering suspected"
ENAME = "TamperingSuspected"
CHECK_CALL = re.compile(
    r"""check\(\s*["'](\w+)["']\s*,\s*globals\(\)\s*(,\s*hidden\s*=\s*True\s*)?\)"""
)


SECRET_FILE = ".hooklab-secret"  # at the course root, beside gradebook.db


def course_secret(root: Path, configured: str = "") -> str:
    """The secret the seeds are derived from: `c.Verify.secret` when set, else a random one kept
    in the course root (made on first use, readable by its owner only). Kernels never see the
    course root in the sandbox, so a submission cannot compute its seeds in advance."""
    if configured:
        return configured
    path = Path(root) / SECRET_FILE
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_hex(32))
    return path.read_text().strip()


def seed_for(secret: str, student: str, assignment: str, grade_id: str) -> int:
    """A 63-bit seed from the course secret and what identifies the cell; stable across regrades."""
    message = f"{assignment}\0{student}\0{grade_id}".encode()
    digest = hmac.new(secret.encode(), message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass
class Guard:
    """The trusted side of one notebook's execution."""

    student: str
    assignment: str
    secret: str = ""
    replies: dict[int, str] = field(default_factory=dict)  # cell index -> reply status
    hidden_errors: set[int] = field(default_factory=set)  # raised, but showed no error output
    # The exercises' own verifier (verifier/host.py): started by `start_verifier`, its verdicts
    # read in `verify`; `run_verifier` makes one (a Verification, or an in-process stand-in).
    run_verifier: Any = None
    timeout: float = 60.0
    exercises: set[str] = field(default_factory=set)  # registered exercises of this notebook
    blanked: dict[int, str] = field(default_factory=dict)  # hidden cells the kernel does not run
    language: str = "en"  # the notebook's: what the student reads is written in it
    _verifier: Any = None
    _known: dict = field(default_factory=dict)  # grade id -> verdicts judged before
    _digests: dict = field(default_factory=dict)  # grade id -> what its verdicts depend on

    @classmethod
    def for_run(cls, cwd: str, config: dict | None) -> Guard:
        """nbgrader runs a submission in autograded/<student>/<assignment>."""
        parts = PurePath(cwd).parts
        secret = str(((config or {}).get("Verify") or {}).get("secret", ""))
        student, assignment = (parts[-2], parts[-1]) if len(parts) >= 2 else ("", "")
        return cls(student, assignment, secret)

    def seed(self, grade_id: str, hidden: bool) -> int:
        kind = "hidden" if hidden else "visible"
        return seed_for(self.secret, self.student, self.assignment, f"{grade_id}/{kind}")

    def prepare(self, nb: Any, executor: Any) -> None:
        """Before execution: start the exercises' verifier, keep their hidden test cells from the
        kernel (the verifier runs them); make `executor` report reply statuses."""
        self.exercises = set(exercises_in(nb))
        self.language = notebook_language(nb)
        if self.exercises and self.run_verifier is not None:
            request = build_request(nb, self.seed, timeout=self.timeout, language=self.language)
            self._ask_for_new(request.to_dict())
        for index, cell in enumerate(nb.cells):
            if not _is_test_cell(cell):
                continue
            owner = _owner(cell, self.exercises)
            if owner and _grade_id(cell) == f"{owner}_hidden":
                self.blanked[index] = cell.source
                cell.source = ""  # nbclient skips an empty cell

        nbgrader_hook = getattr(executor, "on_cell_executed", None)

        def on_cell_executed(cell, cell_index, execute_reply):
            status = execute_reply.get("content", {}).get("status", "")
            self.replies[cell_index] = status
            if status == "error" and not any(o.output_type == "error" for o in cell.outputs):
                self.hidden_errors.add(cell_index)
            if nbgrader_hook:  # nbgrader's Execute adds the reply's error when none is shown
                nbgrader_hook(cell=cell, cell_index=cell_index, execute_reply=execute_reply)

        executor.on_cell_executed = on_cell_executed

    def _ask_for_new(self, request: dict) -> None:
        """Start a verifier for the exercises whose code no verifier of this run has judged yet
        (worker/verdict_cache.py); none when every one has been."""
        self._known, new = {}, []
        for exercise in request["exercises"]:
            digest = verdict_cache.key(request["shared"], exercise, self.language, self.timeout)
            self._digests[exercise["grade_id"]] = digest
            seen = verdict_cache.known(digest)
            if seen is None:
                new.append(exercise)
            else:
                self._known[exercise["grade_id"]] = seen
        if new:
            self._verifier = self._start({**request, "exercises": new})

    def _start(self, request: dict) -> Any:
        try:
            return self.run_verifier(request)
        except (VerifierFailed, OSError, RuntimeError):  # once more; then a grader fault
            return _as_grader_fault(lambda: self.run_verifier(request))

    def _verdicts(self) -> dict:
        fresh = {}
        if self._verifier is not None:
            try:
                fresh = self._verifier.verdicts()
            except (VerifierFailed, OSError, RuntimeError):
                fresh = _as_grader_fault(lambda: self._verifier.again().verdicts())
        for grade_id, by_check in fresh.items():
            if grade_id in self._digests:
                verdict_cache.keep(self._digests[grade_id], by_check)
        return {**self._known, **fresh}

    def secrets(self) -> set[str]:
        """What no output may show: the lines of the hidden test cells the kernel never gets, and
        the seeds of the exercises' checks (only the verifier gets them; its verdicts are text
        that a judge writes, so this guards against one that ever quotes its inputs)."""
        seeds = {str(self.seed(gid, hidden)) for gid in self.exercises for hidden in (False, True)}
        return seeds | hygiene.secret_lines(list(self.blanked.values()))

    def verify(self, nb: Any) -> list[str]:
        """Give every passing test cell of executed `nb` its trusted verdict (in place); returns
        the flags, one sentence each, also stored in nb.metadata.hooklab.flags."""
        findings = scan_cells(nb)
        verdicts = self._verdicts()
        flags = [_flag_text(finding) for finding in findings] + layout_notes(nb)
        tr = translator(self.language)
        for finding_cell, items in _by_cell(nb, findings):
            # A cell whose syntax error the kernel showed already needs no second word on it.
            items = [f for f in items if not _showed_syntax_error(f, finding_cell)]
            if not items:
                continue
            text = "\n".join(
                tr(N_("⚠ grader: {note}")).format(note=_flag_text(f, tr)) for f in items
            )
            finding_cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=text))
        for index, cell in enumerate(nb.cells):
            if index in self.blanked:
                cell.source = self.blanked[index]
            if not _is_test_cell(cell):
                continue
            owner = _owner(cell, self.exercises)
            if owner:
                flags += self._exercise_verdict(index, cell, owner, verdicts, findings)
                continue
            if any(o.output_type == "error" for o in cell.outputs):
                continue  # nbgrader scores it zero already
            reason = self._ran(index, cell)
            if reason:
                name = cell.metadata["nbgrader"].get("grade_id", cell.get("id"))
                flags.append(f"{FLAG}: cell {name} gets 0: {reason}")
                cell.outputs = [_flag_output(name, tr(reason), tr)]
        if flags:  # no key of ours in a notebook that has nothing to say (as nbgrader's own)
            nb.metadata.setdefault("hooklab", {})["flags"] = flags
        return flags

    def _exercise_verdict(
        self, index: int, cell: Any, owner: str, verdicts: dict, findings: list[Finding]
    ) -> list[str]:
        """Give a registered exercise's test cell its verifier's verdict (in place): a hidden
        cell, which the kernel did not run, gets it as its output; a visible cell that passed
        in the kernel keeps its points only if the verifier agrees. Returns its flags."""
        hidden = _grade_id(cell) == f"{owner}_hidden"
        verdict = verdicts.get(owner, {}).get(hidden)
        tampering = [f for f in findings if f.cell == owner and f.tampers]
        name = _grade_id(cell)
        tr = translator(self.language)
        if any(o.output_type == "error" for o in cell.outputs):
            return []  # the kernel's own zero (a failed check, or "not run" after a death)
        if not hidden and (reason := self._ran(index, cell)):
            cell.outputs = [_flag_output(name, tr(reason), tr)]
            return [f"{FLAG}: cell {name} gets 0: {reason}"]
        if tampering:
            what = tampering[0].what
            reason = TAMPERS_WITH_GRADING.format(owner=owner, what=what)
            cell.outputs = [
                _flag_output(
                    name, tr(TAMPERS_WITH_GRADING).format(owner=owner, what=render(what, tr)), tr
                )
            ]
            return [f"{FLAG}: cell {name} gets 0: {reason}"]
        if verdict is None:
            cell.outputs = [_flag_output(name, tr(NO_VERDICT), tr)]
            return [f"{FLAG}: cell {name} gets 0: {NO_VERDICT}"]
        if verdict.passed:
            if hidden:
                text = f"✓ {owner}: {verdict.message}\n"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
            return []
        if verdict.flag:  # the flag is the instructor's; the verifier's message is the student's
            cell.outputs = [_flag_output(name, verdict.message, tr)]
            return [f"{verdict.flag} (cell {name} gets 0)"]
        cell.outputs = [_failure_output(owner, verdict, tr)]
        return []

    def _ran(self, index: int, cell: Any) -> str:
        """Why a cell that shows no error did not run through ("" when it did), in English."""
        if index in self.hidden_errors:
            return HIDDEN_ERROR
        if cell.get("execution_count") is None and index not in self.replies:
            return NOT_RUN
        if self.replies.get(index, "ok") != "ok":
            return KERNEL_SAYS_ERROR
        return ""


# Why a test cell scores 0, in English for the flags, translated for the notebook.
HIDDEN_ERROR = N_("the cell raised an error, but its error output was hidden")
NOT_RUN = N_("this cell did not run (the kernel stopped before it)")
KERNEL_SAYS_ERROR = N_("the kernel says this cell raised an error")
NO_VERDICT = N_("the grader did not get a verdict for it")
TAMPERS_WITH_GRADING = N_("its answer cell {owner} tampers with grading ({what})")


def _as_grader_fault(attempt: Any) -> Any:
    """`attempt()`, its failure raised as VerifierFailed: the submission then fails as the
    grader's fault (batch.py), rather than scoring what the grader could not judge as zero."""
    try:
        return attempt()
    except VerifierFailed:
        raise
    except (OSError, RuntimeError) as error:
        raise VerifierFailed(f"the verifier failed twice ({error})") from error


def scan_cells(nb: Any) -> list[Finding]:
    """Static findings in the cells the student wrote (not the restored locked/test cells).

    A cell that does not parse cannot have run, unless the kernel read it differently from the
    scan (an earlier cell changed how IPython reads cells): when the kernel ran it without a
    syntax error, its finding counts as tampering. A manually graded answer that does not parse
    is no finding: a person reads it (prose in a code cell), and its syntax error is in sight."""
    found = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("locked") or _is_test_cell(cell):
            continue
        read_by_a_person = bool(meta.get("grade") and meta.get("solution"))
        for finding in scan_source(cell.source, meta.get("grade_id") or cell.get("id", "?")):
            if finding.kind == UNPARSABLE and _ran_without_syntax_error(cell):
                what = Phrase(
                    N_("{what}; yet the kernel ran it without a syntax error"), what=finding.what
                )
                finding = Finding(finding.cell, finding.line, what)
            elif finding.kind == UNPARSABLE and read_by_a_person:
                continue
            found.append(finding)
    return found


SYNTAX_ERRORS = {"SyntaxError", "IndentationError", "TabError"}


def _ran_without_syntax_error(cell: Any) -> bool:
    errors = {o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"}
    return cell.get("execution_count") is not None and not errors & SYNTAX_ERRORS


def _showed_syntax_error(finding: Finding, cell: Any) -> bool:
    errors = {o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"}
    return finding.kind == UNPARSABLE and bool(errors & SYNTAX_ERRORS)


def _flag_text(finding: Finding, tr: Any = str) -> str:
    """A finding as the flags say it (English), or as the notebook does (`tr`, its language)."""
    where = tr(N_("cell {cell}, line {line}: {what}")).format(
        cell=finding.cell, line=finding.line, what=render(finding.what, tr)
    )
    if finding.kind == UNPARSABLE:
        return tr(N_("cannot be read: {finding}")).format(finding=where)
    return tr(N_("tampering suspected: {finding}")).format(finding=where)


def layout_notes(nb: Any) -> list[str]:
    """Test cells that are missing, above their exercise, or copied into ordinary cells.

    nbgrader restores test cells by grade id, keeps only the last of duplicated ids and scores a
    missing test cell zero; these notes tell the student why. Expected test cells follow the
    course's convention: exercise <id> has <id>_test, and <id>_hidden when it has a hidden check.
    """
    index = {}
    for position, cell in enumerate(nb.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id:
            index.setdefault(grade_id, position)
    notes = []
    for position, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        exercise = meta.get("grade_id")
        if meta.get("solution") and registry.notebook_of(exercise or ""):
            hidden = [f"{exercise}_hidden"] if registry.defines(exercise, "hidden") else []
            tests = [f"{exercise}_test", *hidden]
            for test in tests:
                if test not in index:
                    notes.append(
                        f"test cell {test} is missing from the notebook (deleted?); it scores 0"
                    )
                elif index[test] < position:
                    notes.append(f"test cell {test} was moved above its exercise {exercise}")
        elif cell.cell_type == "code" and not meta and CHECK_CALL.search(cell.source):
            notes.append(
                f"cell {cell.get('id', position)} is a copy of a test cell; only the grader's own "
                "copy of a test cell is graded"
            )
    return notes


def flags_of(notebook: str) -> list[str]:
    """The flags Guard.verify stored in an executed notebook (JSON text)."""
    return list(json.loads(notebook).get("metadata", {}).get("hooklab", {}).get("flags", []))


def _is_test_cell(cell: Any) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _by_cell(nb: Any, findings: list[Finding]) -> list[tuple[Any, list[Finding]]]:
    """The findings grouped by the cell they are in."""
    groups: dict[int, tuple[Any, list[Finding]]] = {}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        mine = [f for f in findings if f.cell == (meta.get("grade_id") or cell.get("id", "?"))]
        if mine and _is_test_cell(cell) is False:
            groups[index] = (cell, mine)
    return list(groups.values())


def _flag_output(name: str, reason: str, tr: Any = str) -> Any:
    """The error output that gives test cell `name` zero; `reason` is already translated."""
    text = tr(N_("✗ {name}: tampering suspected: {reason}. This cell scores 0.")).format(
        name=name, reason=reason
    )
    return nbformat.v4.new_output("error", ename=ENAME, evalue=text, traceback=[text])


def _grade_id(cell: Any) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id", "")


def _owner(cell: Any, exercises: set[str]) -> str | None:
    """The registered exercise a test cell belongs to (`<id>_test` / `<id>_hidden`), if any."""
    name = _grade_id(cell)
    base = name.rsplit("_", 1)[0]
    return base if base in exercises and name in (f"{base}_test", f"{base}_hidden") else None


def _failure_output(grade_id: str, verdict: Verdict, tr: Any = str) -> Any:
    """The error output the kernel shows when this check fails (feedback.py's CheckFailed and
    NotDoneYet, rendered), for a hidden test cell the kernel did not run."""
    if verdict.not_done:
        ename, headline = "NotDoneYet", tr(N_("… {grade_id} is not done yet"))
    else:
        ename, headline = "CheckFailed", tr(N_("✗ {grade_id}"))
    text = f"{headline.format(grade_id=grade_id)}: {verdict.message}"
    return nbformat.v4.new_output("error", ename=ename, evalue=text, traceback=text.splitlines())

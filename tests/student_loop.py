"""A student's session in a real kernel: Run All on the student notebook, then, exercise by
exercise, an answer typed into the answer cell and the cells from it down to its check run.

Cells run as JupyterLab runs them: one execute request each, carrying the cell's id, in a real
ipykernel (IPython's display, linecache and error rendering), with no NBGRADER_EXECUTION in the
environment.
"""

from __future__ import annotations

import os
import queue
from dataclasses import dataclass, field

from golden import ROOT
from jupyter_client.manager import start_new_kernel

from autograder import notebooks


@dataclass
class CellRun:
    cell_id: str
    status: str  # ok | error
    text: str  # everything the cell showed: streams, plain text of displays, error text
    html: str = ""  # the HTML of its displays
    ename: str = ""
    outputs: list = field(default_factory=list)


class StudentSession:
    """The student notebook of `assignment`, open in a kernel of its own."""

    def __init__(self, assignment: str, *, cell_ids: bool = True) -> None:
        """`cell_ids=False`: as Colab, VS Code or the classic Notebook, which send no cell id."""
        self.cell_ids = cell_ids
        path = ROOT / "notebooks" / assignment / f"{assignment}.ipynb"
        self.nb = notebooks.read(path)
        self.cells = [c for c in self.nb.cells if c.cell_type == "code"]
        self.released = {c.id: c.source for c in self.cells}  # as the student got them
        env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(":")
        self.manager, self.client = start_new_kernel(
            kernel_name="python3", cwd=str(path.parent), env=env
        )

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def __enter__(self) -> StudentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index(self, cell_id: str) -> int:
        return next(i for i, c in enumerate(self.cells) if c.id == cell_id)

    def run_all(self) -> list[CellRun]:
        return [self.run(cell) for cell in self.cells]

    def answer(self, grade_id: str, source: str) -> None:
        """Type `source` into the answer cell of `grade_id` (replacing what it held)."""
        self.cells[self.index(grade_id)].source = source

    def run_to_check(self, grade_id: str) -> list[CellRun]:
        """Run the answer cell of `grade_id` and every cell under it down to its check cell."""
        start, stop = self.index(grade_id), self.index(f"{grade_id}_test")
        return [self.run(cell) for cell in self.cells[start : stop + 1]]

    def run(self, cell) -> CellRun:
        # As JupyterLab sends it: the cell's id in the request's metadata.
        content = {
            "code": cell.source,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        metadata = {"cellId": cell.id} if self.cell_ids else {}
        request = self.client.session.msg("execute_request", content, metadata=metadata)
        self.client.shell_channel.send(request)
        msg_id = request["header"]["msg_id"]
        texts, html, outputs, status, ename = [], [], [], "ok", ""
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=120)
            except queue.Empty as error:
                raise TimeoutError(f"cell {cell.id} did not finish") from error
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind == "stream":
                texts.append(content["text"])
            elif kind in ("display_data", "execute_result"):
                texts.append(content["data"].get("text/plain", ""))
                html.append(content["data"].get("text/html", ""))
            elif kind == "error":
                status, ename = "error", content["ename"]
                texts.append("\n".join(content["traceback"]))
            if kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append(content)
        reply = self.client.get_shell_msg(timeout=120)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=120)
        if reply["content"]["status"] == "error":
            status = "error"
        return CellRun(cell.id, status, "".join(texts), "".join(html), ename, outputs)

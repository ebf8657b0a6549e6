"""Cells run without announcing them: for every execute request a stock ipykernel broadcasts a
"busy" status and the cell's code (execute_input) on IOPub before it runs it. nbclient (and so
nbgrader) uses them only to note when they were sent, in the cell's `metadata.execution`
("iopub.status.busy", "iopub.execute_input"), and to number the cell (execute_input's
execution count); its outputs, errors and the end of the cell (the "idle" status and the reply)
do not depend on them. Warm kernels still take those times and that count where they would
have sent them and put them in the cell's execute_reply (its metadata, under UNSENT_TIMES), and
the grading worker writes them where nbclient writes them (write_unsent_times): the autograded
notebook has the same four times and the same number per cell. A request of any other kind
(kernel_info, comm messages from widgets) is announced as before.
"""

from __future__ import annotations

from datetime import datetime

from autograder.grade.speedups.base import need
from autograder.grade.speedups.dates import parse_date

UNSENT_TIMES = "hooklab_unsent_iopub_times"
UNSENT_COUNT = "execution_count"  # also kept there: the execution count execute_input carries
_ANNOUNCEMENTS = ("iopub.status.busy", "iopub.execute_input")


def _announce_cells_in_their_reply() -> None:
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelbase import Kernel
    from jupyter_client import session  # the messages' own clock; Session sends it as ISO 8601

    original_status, original_finish = Kernel._publish_status, IPythonKernel.finish_metadata
    original_input = Kernel._publish_execute_input

    def _publish_status(self, status, channel, parent=None):
        # dispatch_shell announces each request with ("busy", "shell") and no parent: the
        # request it has just set as the shell's parent.
        if status == "busy" and channel == "shell" and parent is None:
            header = self.get_parent(channel).get("header", {})
            if header.get("msg_type") == "execute_request":
                self._hooklab_unsent = {"iopub.status.busy": session.utcnow()}
                return None
        return original_status(self, status, channel, parent)

    def _publish_execute_input(self, code, parent, execution_count):
        unsent = getattr(self, "_hooklab_unsent", None)
        if unsent is None:  # its busy status went out (or none was due): announced as stock
            return original_input(self, code, parent, execution_count)
        unsent["iopub.execute_input"] = session.utcnow()
        unsent[UNSENT_COUNT] = execution_count  # nbclient numbers the cell from this message
        return None

    def finish_metadata(self, parent, metadata, reply_content):
        metadata = original_finish(self, parent, metadata, reply_content)
        unsent, self._hooklab_unsent = getattr(self, "_hooklab_unsent", None), None
        if unsent:
            metadata[UNSENT_TIMES] = unsent
        return metadata

    Kernel._publish_status = _publish_status
    Kernel._publish_execute_input = _publish_execute_input
    IPythonKernel.finish_metadata = finish_metadata


def write_unsent_times(cell, execute_reply) -> None:
    """In the grading worker, once a cell's reply is in: record in the cell the times its kernel
    took instead of announcing it, as nbclient records the announcements' times, and the
    execution count that nbclient gives the cell from its execute_input (nbgrader's autograded
    notebooks number every cell that ran, not only those with a result)."""
    unsent = (execute_reply or {}).get("metadata", {}).get(UNSENT_TIMES)
    if not isinstance(unsent, dict):
        return
    if isinstance(unsent.get(UNSENT_COUNT), int):
        cell["execution_count"] = unsent[UNSENT_COUNT]
    timing = cell.get("metadata", {}).get("execution")
    if isinstance(timing, dict):
        from nbclient.client import timestamp  # not at the top: kernels import this module too

        for key in _ANNOUNCEMENTS:
            sent_at = parse_date(unsent[key]) if isinstance(unsent.get(key), str) else None
            if isinstance(sent_at, datetime):  # written as nbclient writes a message's time
                timing[key] = timestamp({"header": {"date": sent_at}})


def install() -> None:
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelbase import Kernel
    from jupyter_client import session

    need(Kernel, "_publish_status", "_publish_execute_input", "get_parent")
    need(IPythonKernel, "finish_metadata")
    need(session, "utcnow")
    _announce_cells_in_their_reply()

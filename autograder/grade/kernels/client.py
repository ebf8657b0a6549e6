"""The grader's side of a warm kernel (provisioner.py): jupyter_client's client, with sockets that
retry a kernel that is not listening yet within milliseconds."""

from __future__ import annotations

from typing import Any

import zmq
from jupyter_client.asynchronous import AsyncKernelClient

from autograder.grade import speedups
from autograder.grade.speedups.cell_ends import COUNT_OUTPUTS, CellEnds

RECONNECT_MS = 5  # how soon a socket that connected before its kernel was listening retries


def quick_reconnect(context: zmq.Context) -> zmq.Context:
    """A forked kernel binds its sockets a few milliseconds after the grader connects; a socket
    that connected too early retries after zmq's reconnect interval (100 ms by default), which
    was most of a forked kernel's start-up time. Applies to the sockets made afterwards."""
    context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
    return context


class WarmKernelClient(AsyncKernelClient):
    """jupyter_client's client for warm kernels: sockets that reconnect quickly, no heartbeat
    thread, and (with the speed-ups) no fixed wait once the kernel is ready
    (speedups/kernel_ready.py) and cells ended by count (speedups/cell_ends.py)."""

    _cell_ends: CellEnds | None = None  # set by end_cells_by_count

    def _context_default(self) -> zmq.Context:
        return quick_reconnect(super()._context_default())

    def start_channels(self, *args: Any, **kwargs: Any) -> None:
        # No heartbeat thread: whether the kernel lives is asked of its manager (the zygote
        # knows), which is what jupyter_client does whenever a manager made the client.
        kwargs["hb"] = False
        super().start_channels(*args, **kwargs)
        self._cell_ends: CellEnds | None = None

    def end_cells_by_count(self) -> bool:
        """From now on, have the kernel end each cell by count instead of with an idle status
        (cell_ends.py): for nbclient, which takes every message through the channels' get_msg.
        False, and nothing changed, where the channels cannot end cells that way."""
        if not speedups.installed("cell-ends-by-count"):
            return False
        if not getattr(type(self.iopub_channel).get_msg, "supports_cell_ends", False):
            return False
        self._cell_ends = CellEnds(self.iopub_channel, self.shell_channel)
        self.iopub_channel._hooklab_cell_ends = self._cell_ends
        self.shell_channel._hooklab_cell_ends = self._cell_ends
        return True

    def execute(self, code: str, *args: Any, **kwargs: Any) -> str:
        """jupyter_client's execute, asking a warm kernel to end the cell by count."""
        ends = self._cell_ends
        if ends is None:
            return super().execute(code, *args, **kwargs)
        metadata = self.session.metadata
        self.session.metadata = {**metadata, COUNT_OUTPUTS: True}
        try:
            request = super().execute(code, *args, **kwargs)
        finally:
            self.session.metadata = metadata
        ends.replies_due.add(request)
        return request

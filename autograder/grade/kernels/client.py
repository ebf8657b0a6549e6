"""The grader's side of a warm kernel (warm_kernel.py): jupyter_client's client, ready as soon as
a forked kernel is, with sockets that retry a kernel that is not listening yet within
milliseconds."""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

import zmq
from jupyter_client.asynchronous import AsyncKernelClient

from autograder.grade.speedups.cell_ends import COUNT_OUTPUTS, CellEnds

RECONNECT_MS = 5  # how soon a socket that connected before its kernel was listening retries


def quick_reconnect(context: zmq.Context) -> zmq.Context:
    """A forked kernel binds its sockets a few milliseconds after the grader connects; a socket
    that connected too early retries after zmq's reconnect interval (100 ms by default), which
    was most of a forked kernel's start-up time. Applies to the sockets made afterwards."""
    context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
    return context


class WarmKernelClient(AsyncKernelClient):
    """jupyter_client's client, minus a fixed wait: once the kernel is ready, the stock
    wait_for_ready drains IOPub until it has been quiet for 0.2 s. Here it is ready once IOPub
    has delivered the idle status of a kernel_info request: everything the kernel published
    before that has arrived too (nbclient ignores any message that is not about its request)."""

    _cell_ends: CellEnds | None = None  # set by end_cells_by_count

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or 60)
        while True:
            asked = self.kernel_info()
            reply = await self._reply_to(asked, within=1)
            # IOPub is a subscription: what the kernel sends before it is connected is lost;
            # if this request's statuses do not come, ask again.
            if reply is not None and await self._iopub_idle_after(asked, within=0.03):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")

    async def _reply_to(self, request: str, within: float) -> dict | None:
        """The shell reply to `request` (replies to earlier requests are skipped), or None if
        none comes for `within` seconds."""
        while True:
            try:
                reply = await self.shell_channel.get_msg(timeout=within)
            except Empty:
                return None
            if reply["parent_header"].get("msg_id") == request:
                return reply

    async def _iopub_idle_after(self, request: str, within: float) -> bool:
        """True once IOPub brings the idle status of `request`, False if nothing comes for
        `within` seconds."""
        while True:
            try:
                message = await self.iopub_channel.get_msg(timeout=within)
            except Empty:
                return False
            if (
                message["msg_type"] == "status"
                and message["parent_header"].get("msg_id") == request
                and message["content"].get("execution_state") == "idle"
            ):
                return True

    wait_for_ready = _async_wait_for_ready

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

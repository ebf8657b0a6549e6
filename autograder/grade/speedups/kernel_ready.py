"""A warm kernel's client ready without a fixed wait. Once a kernel answers kernel_info, the stock
wait_for_ready drains IOPub until it has been quiet for 0.2 s: a fifth of a second of every
notebook's wall time. Here the client is ready once IOPub has delivered the idle status of a
kernel_info request: everything the kernel published before that has arrived too (nbclient
ignores any message that is not about its request)."""

from __future__ import annotations

import time
from queue import Empty

from autograder.grade.speedups.base import need


async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
    deadline = time.monotonic() + (timeout or 60)
    while True:
        asked = self.kernel_info()
        reply = await _reply_to(self, asked, within=1)
        # IOPub is a subscription: what the kernel sends before it is connected is lost;
        # if this request's statuses do not come, ask again.
        if reply is not None and await _iopub_idle_after(self, asked, within=0.03):
            self._handle_kernel_info_reply(reply)
            return
        if not await self._async_is_alive():
            raise RuntimeError("Kernel died before replying to kernel_info")
        if time.monotonic() > deadline:
            raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")


async def _reply_to(client, request: str, within: float) -> dict | None:
    """The shell reply to `request` (replies to earlier requests are skipped), or None if
    none comes for `within` seconds."""
    while True:
        try:
            reply = await client.shell_channel.get_msg(timeout=within)
        except Empty:
            return None
        if reply["parent_header"].get("msg_id") == request:
            return reply


async def _iopub_idle_after(client, request: str, within: float) -> bool:
    """True once IOPub brings the idle status of `request`, False if nothing comes for
    `within` seconds."""
    while True:
        try:
            message = await client.iopub_channel.get_msg(timeout=within)
        except Empty:
            return False
        if (
            message["msg_type"] == "status"
            and message["parent_header"].get("msg_id") == request
            and message["content"].get("execution_state") == "idle"
        ):
            return True


def install() -> None:
    from jupyter_client.client import KernelClient

    from autograder.grade.kernels.client import WarmKernelClient

    need(KernelClient, "_async_wait_for_ready", "_handle_kernel_info_reply", "_async_is_alive")
    # AsyncKernelClient's wait_for_ready is its _async_wait_for_ready: both names, as there.
    WarmKernelClient._async_wait_for_ready = _async_wait_for_ready
    WarmKernelClient.wait_for_ready = _async_wait_for_ready

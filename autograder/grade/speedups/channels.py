"""A grading worker's reads of kernel messages without pyzmq's asyncio poller.

jupyter_client's asyncio channels wait for every message through pyzmq's asyncio poller (a few
futures and event-loop turns per message, most of a grading worker's CPU per cell). Here a
channel takes a message that is there at once, and otherwise waits for its socket with a plain
zmq poll, in slices of at most 50 ms between which the event loop turns: its other tasks
(nbclient reads the shell and IOPub channels side by side) and timers (cell time-outs, the
kernel-alive check) run as before, at most a slice late. While a cell whose end comes by count
(cell_ends.py) waits for its reply, each of the two readers watches both sockets, and the IOPub
reader hands nbclient the cell's idle status once its outputs are all in.
"""

from __future__ import annotations

import asyncio
import time
from queue import Empty

import zmq
from jupyter_client.channels import AsyncZMQSocketChannel

from autograder.grade.speedups.base import need
from autograder.grade.speedups.cell_ends import CellEnds

_original_get_msg = AsyncZMQSocketChannel.get_msg
# After this many messages taken at once, the channel lets the event loop turn (as every
# message did before), so a kernel that floods a channel cannot starve the grader's timers.
_TAKEN_BEFORE_A_TURN = 32
_WAIT_SLICE = 0.05  # seconds a channel waits for its socket before the loop turns


def _plain(channel: AsyncZMQSocketChannel) -> zmq.Socket:
    """A plain (blocking-API) socket on the channel's zmq socket, whose asyncio recv returns a
    future. Made again if the channel's socket is not the one it shadows."""
    shadowed, plain = getattr(channel, "_hooklab_plain", (None, None))
    if shadowed is not channel.socket:
        plain = zmq.Socket.shadow(channel.socket.underlying)
        channel._hooklab_plain = (channel.socket, plain)
    return plain


def _take(channel: AsyncZMQSocketChannel, plain: zmq.Socket) -> dict | None:
    """The message waiting on the channel's socket, or None."""
    try:
        frames = plain.recv_multipart(zmq.NOBLOCK)
    except zmq.Again:
        return None
    _, message = channel.session.feed_identities(frames)
    message = channel.session.deserialize(message)
    ends: CellEnds | None = getattr(channel, "_hooklab_cell_ends", None)
    if ends is not None:  # see cell_ends.py
        (ends.took_iopub if channel is ends.iopub else ends.took_reply)(message)
    return message


async def _get_msg(self: AsyncZMQSocketChannel, timeout: float | None = None) -> dict:
    socket = self.socket
    if socket is None or socket.closed:
        return await _original_get_msg(self, timeout)
    plain = _plain(self)
    ends: CellEnds | None = getattr(self, "_hooklab_cell_ends", None)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if ends is not None:  # what the other channel's reader took for this one
            due = ends.idle_due if self is ends.iopub else ends.shell_backlog
            if due:
                return due.popleft()
        taken = getattr(self, "_hooklab_taken", 0)
        if taken >= _TAKEN_BEFORE_A_TURN:
            self._hooklab_taken = 0
            await asyncio.sleep(0)
            continue
        message = _take(self, plain)
        if message is not None:
            self._hooklab_taken = taken + 1
            return message
        self._hooklab_taken = 0
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise Empty
        wait = _WAIT_SLICE if left is None else min(_WAIT_SLICE, left)
        if ends is not None and (ends.replies_due or ends.expected):
            if _wait_during_cell(self, ends, plain, wait):
                continue
        elif plain.poll(int(wait * 1000) or 1, zmq.POLLIN):
            continue
        await asyncio.sleep(0)


_get_msg.supports_cell_ends = True  # kernel_client.WarmKernelClient asks for it


def _wait_during_cell(
    channel: AsyncZMQSocketChannel, ends: CellEnds, plain: zmq.Socket, wait: float
) -> bool:
    """A reader's wait while a cell's end is due (cell_ends.py). Until its reply is in, both
    readers watch both sockets, so that neither holds up the event loop while the other's
    messages wait: the IOPub reader takes the reply for the shell reader, and the shell reader
    lets the IOPub reader (nbclient's output task) take what IOPub brings, or a flood of outputs
    would overflow the kernel's queue for this client while the shell reader waits. Once the
    reply is in, the IOPub reader ends the cell if IOPub stays quiet too long (lost messages).
    True if there is something to take at once, False if the loop should turn first."""
    reading_iopub = channel is ends.iopub
    quiet = ends.quiet_deadline() if reading_iopub else None
    if quiet is not None:
        wait = max(0.0, min(wait, quiet - time.monotonic()))
    other = None
    if ends.replies_due:
        other = _plain(ends.shell if reading_iopub else ends.iopub)
    ready, _, _ = zmq.select([plain] if other is None else [plain, other], [], [], wait)
    if plain in ready:
        return True
    if other is not None and other in ready:
        if not reading_iopub:
            return False
        reply = _take(ends.shell, other)
        if reply is not None:
            ends.shell_backlog.append(reply)
        return True
    if quiet is not None and time.monotonic() >= quiet:
        ends.end_overdue()
        return True
    return False


def install() -> None:
    need(AsyncZMQSocketChannel, "get_msg")
    need(zmq.Socket, "shadow")
    AsyncZMQSocketChannel.get_msg = _get_msg

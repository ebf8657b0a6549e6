"""How a grading worker learns that a cell run in a warm kernel is over, with one message fewer.

A stock kernel ends every request with an "idle" status on IOPub, sent after its reply on the
shell channel; nbclient takes a cell as over once it has both. The reply alone cannot say that
the cell's outputs are in: they travel on IOPub, another socket. For a cell without output the
idle status is one message of three, paid for in the kernel (its main thread, its IOPub thread,
zmq's I/O thread) and in the worker (zmq, `Session.deserialize`, the event loop).

A grading worker's execute requests carry COUNT_OUTPUTS in their metadata. A warm kernel holds
the reply to such a request back until the point where it would publish the idle status (after
the same flushes of stdout and stderr), counts the IOPub messages it has queued for the request
by then (what it sends itself, and what it forwards of a forked child's output), and sends the
reply with that count and the time, in its metadata (OUTPUTS_SENT), instead of the idle status.
Everything queued for IOPub goes out in order, so the counted messages come before any later
one of the same request (which nbclient ignores, as it ignores what follows an idle status).
The worker (CellEnds, which channels._get_msg consults) hands nbclient an idle status with the
kernel's time once it has the reply and that many IOPub messages of the request: the cell's
outputs, its four recorded times and the moment nbclient moves on are the same. Any other
request (kernel_info, a plain client's execute request) is answered as stock.

If IOPub loses messages (a publisher drops what goes over its high-water mark, as under a flood
of outputs), the count is never reached: the worker then ends the cell once IOPub has been quiet
for QUIET_SECONDS after the reply, as the stock idle status would have ended it, with the same
outputs missing.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from typing import Any

from autograder.grade.speedups.base import Missing, need
from autograder.grade.speedups.dates import parse_date

COUNT_OUTPUTS = "hooklab_count_outputs"  # in an execute request's metadata: end it by count
OUTPUTS_SENT = "hooklab_outputs_sent"  # in its reply's metadata: {"count": n, "idle": time}
QUIET_SECONDS = 2.0  # under nbclient's iopub_timeout (4 s), which nbgrader makes an error


# The kernel's side (installed in the kernel template).


class _Counting:
    """The execute request a kernel is running: its IOPub messages so far, and its reply."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.sent = 0
        self.reply: tuple | None = None  # (session, stream, message, ident, buffers)
        self.lock = threading.Lock()  # the main thread and the IOPub thread both send

    def add(self, request: str | None) -> None:
        """One more IOPub message for `request`: counted if it is this one."""
        if request == self.request_id:
            with self.lock:
                self.sent += 1


_counting: _Counting | None = None  # a kernel runs one request at a time


def _parent_id(message: dict | None) -> str | None:
    return (message or {}).get("parent_header", {}).get("msg_id")


def install_in_kernel() -> None:
    """Patch ipykernel and jupyter_client in this process (the template, before any fork)."""
    from ipykernel.iostream import BackgroundSocket, IOPubThread
    from ipykernel.kernelbase import Kernel
    from jupyter_client import session as jupyter_session

    need(jupyter_session.Session, "send", "msg")
    need(Kernel, "_publish_status", "get_parent")
    need(IOPubThread, "_handle_pipe_msg", "_is_master_process")
    original_send, original_status = jupyter_session.Session.send, Kernel._publish_status
    original_forward = IOPubThread._handle_pipe_msg
    # Bound here, not looked up in this module when a message goes out: a notebook that replaces
    # the package's functions (it can reach them) must not stop its kernel from replying.
    parent_id, counting_class, forwarded_parent_id = _parent_id, _Counting, _forwarded_parent_id
    reply_instead_of_idle = _send_reply_instead_of_idle

    def send(self, stream, msg_or_type, content=None, parent=None, ident=None, *args, **kwargs):
        counting = _counting
        if counting is None:
            return original_send(self, stream, msg_or_type, content, parent, ident, *args, **kwargs)
        if msg_or_type == "execute_reply" and counting.reply is None and not args:
            header, metadata = kwargs.get("header"), kwargs.get("metadata")
            message = self.msg(msg_or_type, content, parent, header, metadata)
            if parent_id(message) == counting.request_id:
                counting.reply = (self, stream, message, ident, kwargs.get("buffers"))
                return message  # what stock send returns; sent at the idle status's place
        if isinstance(stream, BackgroundSocket | IOPubThread):
            if isinstance(msg_or_type, dict):
                request = parent_id(msg_or_type)
            else:
                request = jupyter_session.extract_header(parent or {}).get("msg_id")
            # Counted before it is queued: whatever the IOPub thread sends before the count is
            # read has been counted.
            counting.add(request)
        return original_send(self, stream, msg_or_type, content, parent, ident, *args, **kwargs)

    def _handle_pipe_msg(self, msg):
        # A forked child's output, which the IOPub thread forwards as it is (not through send).
        counting = _counting
        forwarded = self._pipe_flag and self._is_master_process() and msg[:1] == [self._pipe_uuid]
        if counting is not None and forwarded:
            counting.add(forwarded_parent_id(msg[1:]))
        return original_forward(self, msg)

    def _publish_status(self, status, channel, parent=None):
        global _counting
        if channel == "shell" and parent is None:
            request = self.get_parent(channel)
            header = request.get("header", {})
            if status == "busy" and header.get("msg_type") == "execute_request":
                asked = (request.get("metadata") or {}).get(COUNT_OUTPUTS)
                _counting = counting_class(header.get("msg_id")) if asked else None
            elif status == "idle" and _counting is not None:
                counting, _counting = _counting, None
                if counting.reply is not None and header.get("msg_id") == counting.request_id:
                    return reply_instead_of_idle(counting, original_send)
        return original_status(self, status, channel, parent)

    jupyter_session.Session.send = send
    IOPubThread._handle_pipe_msg = _handle_pipe_msg
    Kernel._publish_status = _publish_status


def _forwarded_parent_id(frames: list) -> str | None:
    """The parent's msg_id in a message as sent on the wire (identities, the delimiter, the
    signature, the header, the parent header, ...)."""
    try:
        parts = [bytes(frame) for frame in frames]
        parent = json.loads(parts[parts.index(b"<IDS|MSG>") + 3])
    except (ValueError, IndexError, TypeError):
        return None
    return parent.get("msg_id") if isinstance(parent, dict) else None


def _send_reply_instead_of_idle(counting: _Counting, send: Any) -> None:
    from jupyter_client.session import utcnow
    from zmq.eventloop.zmqstream import ZMQStream

    session, stream, message, ident, buffers = counting.reply
    with counting.lock:
        sent = counting.sent
    message["metadata"][OUTPUTS_SENT] = {"count": sent, "idle": utcnow()}
    if isinstance(stream, ZMQStream) and not stream.sending():
        # Straight onto the shell socket (this thread's alone), as nothing of the stream's
        # waits: ZMQStream would queue it for the event loop's next turn, which the flush after
        # this waits for (~0.08 ms of the kernel's CPU per cell).
        stream = stream.socket
    send(session, stream, message, ident=ident, buffers=buffers)


# The grading worker's side.


def install_in_worker() -> None:
    """Nothing to patch: WarmKernelClient asks for cells ended by count once this is installed,
    through the channels' reads (channels.py), which must be installed too."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    if not getattr(AsyncZMQSocketChannel.get_msg, "supports_cell_ends", False):
        raise Missing("the channels read messages as jupyter_client does (channel-reads is off)")


class CellEnds:
    """One kernel client's count of IOPub messages per request, the replies that say how many
    to expect, and the idle statuses due to nbclient. Shared by the client's shell and IOPub
    channels: whichever of the two readers takes a reply off the shell socket records it (the
    IOPub reader also watches that socket while a reply is due, so that its wait does not hold
    up the event loop, and keeps what it took for the shell reader in `shell_backlog`)."""

    def __init__(self, iopub: Any, shell: Any) -> None:
        self.iopub, self.shell = iopub, shell  # the client's channels
        self.replies_due: set[str] = set()  # execute requests sent, their replies not yet in
        self.shell_backlog: deque[dict] = deque()
        self.delivered: dict[str, int] = {}  # request id -> IOPub messages handed out
        # request id -> (IOPub messages it sent, the kernel's idle time, its reply, when taken)
        self.expected: dict[str, tuple[int, Any, dict, float]] = {}
        self.idle_due: deque[dict] = deque()
        self.last_iopub = time.monotonic()

    def took_iopub(self, message: dict) -> None:
        self.last_iopub = time.monotonic()
        request = _parent_id(message)
        if request is not None:
            self.delivered[request] = self.delivered.get(request, 0) + 1
            self._end_if_complete(request)

    def took_reply(self, message: dict) -> None:
        request = _parent_id(message)
        self.replies_due.discard(request)
        sent = (message.get("metadata") or {}).get(OUTPUTS_SENT)
        if request is not None and isinstance(sent, dict) and isinstance(sent.get("count"), int):
            self.expected[request] = (sent["count"], sent.get("idle"), message, time.monotonic())
            self._end_if_complete(request)

    def quiet_deadline(self) -> float | None:
        """When the IOPub reader stops waiting for messages a reply announced (None: none due)."""
        if not self.expected:
            return None
        return max(self.last_iopub, min(e[3] for e in self.expected.values())) + QUIET_SECONDS

    def end_overdue(self) -> None:
        """Past the quiet deadline: end every announced cell with what arrived (lost messages)."""
        for request in list(self.expected):
            self._end(request)

    def _end_if_complete(self, request: str) -> None:
        expected = self.expected.get(request)
        if expected is not None and self.delivered.get(request, 0) >= expected[0]:
            self._end(request)

    def _end(self, request: str) -> None:
        _, idle, reply, _ = self.expected.pop(request)
        self.delivered.pop(request, None)
        header = dict(reply["header"], msg_id=f"{reply['header'].get('msg_id')}-idle")
        date = parse_date(idle) if isinstance(idle, str) else None
        header.update(msg_type="status", date=date if date is not None else header.get("date"))
        self.idle_due.append(
            {
                "header": header,
                "msg_id": header["msg_id"],
                "msg_type": "status",
                "parent_header": reply["parent_header"],
                "metadata": {},
                "content": {"execution_state": "idle"},
                "buffers": [],
            }
        )

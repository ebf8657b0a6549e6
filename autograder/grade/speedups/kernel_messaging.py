"""Messaging speed-ups installed in the kernel template (zygote.py) with kernel_speedups.py:
what ipykernel and jupyter_client repeat or wait for on every message, which a kernel (and, for
the dates, a grading worker) no longer does. A kernel sends and receives what a stock ipykernel
does, in the same order (tests/grade/speedups/test_kernel_speedups.py compares with a stock
kernel), except for the two announcements of an execute request that only clients showing a
kernel to a person use, and the idle status that ends a grading worker's cells (cell_ends.py):

* For every cell a stock kernel broadcasts a "busy" status and the cell's code (execute_input)
  on IOPub before it runs it. nbclient (and so nbgrader) uses them only to note when they were
  sent, in the cell's `metadata.execution` ("iopub.status.busy", "iopub.execute_input"), and
  to number the cell (execute_input's execution count); its outputs, errors and the end of the
  cell (the "idle" status and the reply) do not depend on them. Two messages fewer per cell,
  out of four for a cell without output, was about 4% of a grading run's CPU in both
  processes. The kernel still takes those times and that count where it would have sent them
  and puts them in the cell's execute_reply (its metadata, under UNSENT_TIMES), and the
  grading worker writes them where nbclient writes them (write_unsent_times): the autograded
  notebook has the same four times and the same number per cell. A request of any other kind
  (kernel_info, comm messages from widgets) is announced as before.

* jupyter_client parses the dates in every message it receives with dateutil: here with
  `datetime.fromisoformat` (the same datetimes), falling back to dateutil for anything else.
* The kernel's logger builds a record for every debug call on every message, which its handler
  then drops: its level is raised to what its handlers would emit.
* After every cell ipykernel flushes stdout and stderr: each flush hands two tasks to the IOPub
  thread and waits for them, even when nothing was written. Here a flush with nothing written,
  nothing pending and no timed flush under way returns at once; anything else is flushed as
  before.
* ipykernel hands every IOPub message (four or more per cell) to its IOPub thread with a wake-up
  message of its own on an in-process zmq socket, which that thread receives through a
  ZMQStream. Here the thread is woken through its event loop instead, and only when it is not
  already due to wake: it then sends everything queued, in order, as before.
* ipykernel 7 receives shell requests on a thread of their own, which hands each to the main
  thread over a socket pair and each reply back the same way, so that "subshells" (extra
  threads running cells concurrently) can be served. Nothing here asks for a subshell: the
  main thread reads the shell socket itself, as ipykernel 6 did (and ipykernel 7 still does
  without that thread), and the kernel no longer lists subshells among its features.
* zmq drops what a kernel publishes on IOPub beyond 1000 messages queued for a client. The
  IOPub thread woken once for what is queued (above) sends a burst of outputs faster than a
  stock kernel does, so a cell that floods (5000 `display` calls in a loop) lost outputs that
  a stock kernel delivers, its error among them, which decides a test cell's score. Here the
  kernel queues up to IOPUB_QUEUE messages per client, in its own memory (under its limits).
* ipykernel sleeps 0.5 ms before every execute_reply, a guard for clients that stop reading
  outputs when the reply comes. nbclient reads them until the kernel's idle status, which comes
  after every output of the cell either way (for a grading worker's cells: until every
  counted output is in, cell_ends.py), so the kernels here do not sleep.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

from jupyter_client import jsonutil


def _date_functions() -> tuple[Any, Any, Any]:
    """parse_date, _date_or_text and extract_dates, each calling the others through this scope
    rather than through the module: a kernel reads every message it receives with them, and a
    notebook that replaces the package's functions (it can reach them) must not stop its kernel
    from reading messages (it would wait for a reply to every later cell until its time-out)."""
    pattern, fallback, fromisoformat = (
        jsonutil.ISO8601_PAT,
        jsonutil.parse_date,
        datetime.fromisoformat,
    )

    def parse_date(text: str | None) -> Any:
        """jupyter_client's parse_date, with `datetime.fromisoformat` for the dates it writes."""
        if text is None or not pattern.match(text):
            return text
        try:
            parsed = fromisoformat(text)
        except ValueError:
            return fallback(text)
        return parsed if parsed.tzinfo else fallback(text)

    def _date_or_text(text: str) -> Any:
        # ISO8601_PAT matches nothing shorter than 19 characters ("2026-11-27T09:30:05") or
        # without "-" fifth: most strings of a header (ids, names, the message type) skip it.
        if len(text) < 19 or text[4] != "-":
            return text
        return parse_date(text)

    def extract_dates(obj: Any) -> Any:
        """jupyter_client's extract_dates (the dates in a message just received), with
        parse_date. Strings are handled where they are found rather than by a call each: a
        grading worker receives some 200 messages per notebook, each with two headers."""
        if isinstance(obj, dict):
            return {
                key: _date_or_text(value) if isinstance(value, str) else extract_dates(value)
                for key, value in obj.items()
            }
        if isinstance(obj, list | tuple):
            return [
                _date_or_text(item) if isinstance(item, str) else extract_dates(item)
                for item in obj
            ]
        if isinstance(obj, str):
            return _date_or_text(obj)
        return obj

    return parse_date, _date_or_text, extract_dates


parse_date, _date_or_text, extract_dates = _date_functions()


def drop_unheard_log_records(logger: logging.Logger) -> None:
    """Raise `logger`'s level to the lowest level at which any handler that its records reach
    would emit them. traitlets leaves a kernel's logger at DEBUG and filters in its handler (at
    ERROR here), so each message the kernel handled built debug records that nobody sees."""
    levels, current = [], logger
    while current is not None:
        levels += [handler.level for handler in current.handlers]
        if not current.propagate:
            break
        current = current.parent
    floor = min(levels) if levels else (logging.lastResort.level if logging.lastResort else 0)
    if logger.getEffectiveLevel() < floor:
        logger.setLevel(floor)


def _skip_empty_flushes() -> None:
    from ipykernel.iostream import OutStream

    original, original_flush_now = OutStream.flush, OutStream._flush
    count_lock = threading.Lock()

    def _flush(self):
        # Counted from before it takes the buffers until its message is queued for sending.
        with count_lock:
            self._hooklab_flushes_under_way = getattr(self, "_hooklab_flushes_under_way", 0) + 1
        try:
            original_flush_now(self)
        finally:
            with count_lock:
                self._hooklab_flushes_under_way -= 1

    def flush(self):
        # Nothing buffered, no flush on its way and none under way: the IOPub thread has nothing
        # of this stream to send, so there is nothing to wait for. A timed flush under way on
        # that thread has taken the buffers but not yet queued its message; the stock flush
        # queues behind it, so what the kernel sends next (its idle status) follows the output.
        if self.echo is None and not (
            self._flush_pending
            or self._subprocess_flush_pending
            or self._buffers
            or getattr(self, "_hooklab_flushes_under_way", 0)
        ):
            return
        original(self)

    flush.hooklab = True
    OutStream.flush, OutStream._flush = flush, _flush


IOPUB_QUEUE = 20_000  # messages; zmq's default high-water mark is 1000


def _queue_iopub_floods() -> None:
    import zmq
    from ipykernel.kernelapp import IPKernelApp

    original = IPKernelApp._bind_socket

    def _bind_socket(self, s, port):
        if s.socket_type == zmq.XPUB:  # IOPub; set before binding: a client's queue gets it
            s.sndhwm = IOPUB_QUEUE
        return original(self, s, port)

    IPKernelApp._bind_socket = _bind_socket


def _no_sleep_before_replies() -> None:
    from ipykernel.kernelbase import Kernel

    Kernel.class_traits()["_execute_sleep"].default_value = 0.0


class _NoShellChannelThread:
    """Stands where ipykernel 7 keeps its shell-channel thread: false, as a missing thread is,
    with the one attribute ipykernel reads from it even then (which thread runs cells)."""

    def __init__(self) -> None:
        self.parent_thread = threading.current_thread()

    def __bool__(self) -> bool:
        return False


def _serve_shell_on_main_thread() -> None:
    from ipykernel.kernelapp import IPKernelApp
    from ipykernel.kernelbase import Kernel

    original = IPKernelApp.init_control

    def init_control(self, context):
        original(self, context)
        self.shell_channel_thread = _NoShellChannelThread()

    IPKernelApp.init_control = init_control
    # Stock: "is not None", which the stand-in is not.
    Kernel._supports_kernel_subshells = property(lambda self: bool(self.shell_channel_thread))


def _wake_iopub_thread_once() -> None:
    from ipykernel.iostream import IOPubThread

    original = IOPubThread.schedule

    def send_queued(self) -> None:
        # Cleared before the queue is read: whatever is queued after this gets a wake-up.
        self._hooklab_wake_due = False
        while self._events:
            self._events.popleft()()

    def schedule(self, f) -> None:
        if not self.thread.is_alive():  # stock: run it here (the thread is gone, or this is a fork)
            return original(self, f)
        self._events.append(f)
        if getattr(self, "_hooklab_wake_due", False):
            return
        self._hooklab_wake_due = True
        try:
            self.io_loop.asyncio_loop.call_soon_threadsafe(send_queued, self)
        except RuntimeError:  # its loop closed as the kernel stops: the stock wake-up
            self._hooklab_wake_due = False
            self._event_pipe.send(b"")

    IOPubThread.schedule = schedule


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
    from autograder.grade.speedups import cell_ends  # which imports this module (parse_date)

    _announce_cells_in_their_reply()
    cell_ends.install_in_kernel()  # after the line above: it wraps the same status method
    _serve_shell_on_main_thread()
    _skip_empty_flushes()
    _wake_iopub_thread_once()
    _queue_iopub_floods()
    _no_sleep_before_replies()
    from jupyter_client import session

    session.extract_dates = extract_dates

"""A kernel's output sent as ipykernel sends it, with less waiting and fewer wake-ups. Installed
in the kernel template (kernels inherit it), except the logger's level, set in each kernel.

* After every cell ipykernel flushes stdout and stderr: each flush hands two tasks to the IOPub
  thread and waits for them, even when nothing was written. Here a flush with nothing written,
  nothing pending and no timed flush under way returns at once; anything else is flushed as
  before.
* ipykernel hands every IOPub message (four or more per cell) to its IOPub thread with a wake-up
  message of its own on an in-process zmq socket, which that thread receives through a
  ZMQStream. Here the thread is woken through its event loop instead, and only when it is not
  already due to wake: it then sends everything queued, in order, as before.
* zmq drops what a kernel publishes on IOPub beyond 1000 messages queued for a client. The
  IOPub thread woken once for what is queued (above) sends a burst of outputs faster than a
  stock kernel does, so a cell that floods (5000 `display` calls in a loop) lost outputs that
  a stock kernel delivers, its error among them, which decides a test cell's score. Here the
  kernel queues up to IOPUB_QUEUE messages per client, in its own memory (under its limits).
* ipykernel sleeps 0.5 ms before every execute_reply, a guard for clients that stop reading
  outputs when the reply comes. nbclient reads them until the kernel's idle status, which comes
  after every output of the cell either way, so the kernels here do not sleep.
* ipykernel 7 receives shell requests on a thread of their own, which hands each to the main
  thread over a socket pair and each reply back the same way, so that "subshells" (extra
  threads running cells concurrently) can be served. Nothing here asks for a subshell: the
  main thread reads the shell socket itself, as ipykernel 6 did (and ipykernel 7 still does
  without that thread), and the kernel no longer lists subshells among its features.
* The kernel's logger builds a record for every debug call on every message, which its handler
  then drops: its level is raised to what its handlers would emit.
"""

from __future__ import annotations

import logging
import threading

from autograder.grade.speedups.base import Missing, need


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


def install() -> None:
    import zmq
    from ipykernel.iostream import IOPubThread, OutStream
    from ipykernel.kernelapp import IPKernelApp

    need(OutStream, "flush", "_flush")
    need(IOPubThread, "schedule")
    need(IPKernelApp, "_bind_socket")
    need(zmq, "XPUB")
    _skip_empty_flushes()
    _wake_iopub_thread_once()
    _queue_iopub_floods()


def install_no_reply_sleep() -> None:
    from ipykernel.kernelbase import Kernel

    if "_execute_sleep" not in Kernel.class_traits():
        raise Missing("ipykernel's Kernel has no _execute_sleep")
    _no_sleep_before_replies()


def install_shell_on_main_thread() -> None:
    from ipykernel.kernelapp import IPKernelApp
    from ipykernel.kernelbase import Kernel

    need(IPKernelApp, "init_control")
    need(Kernel, "_supports_kernel_subshells")
    _serve_shell_on_main_thread()


_quiet_log = False


def install_quiet_log() -> None:
    """In a kernel: from now on quiet_log() raises its logger's level."""
    global _quiet_log
    _quiet_log = True


def quiet_log(logger: logging.Logger) -> None:
    """In a forked kernel, once its application is made: drop_unheard_log_records if installed."""
    if _quiet_log:
        drop_unheard_log_records(logger)

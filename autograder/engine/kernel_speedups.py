"""Speed-ups installed in the kernel template (zygote.py) before it forks kernels: a kernel shows
exactly what a stock ipykernel shows (tracebacks, figures, streams), with less repeated work.

An unfinished notebook raises in a dozen cells, and formatting those tracebacks was most of what
its kernel spent; the rest is per-cell messaging. What is no longer repeated or waited for:

* IPython formats each error twice with the same arguments: once to show it, once to store it in
  the history. The second call returns the first call's lines.
* stack_data highlights every frame's source with a lexer class it creates anew per frame, so
  pygments compiles the Python grammar's regular expressions every time. Here the class is made
  once, and the highlighted lines of a (code, marked range, formatter style) are remembered:
  frames in torch's module.py recur in every traceback through a hook.
* IPython makes a new pygments style and terminal formatter (a colour table) per traceback:
  here one per style.
* `inspect.getmodule` scans all of sys.modules (~3000 entries) for every frame whose file is a
  notebook cell, which no module has. The scan only registers modules imported since the last
  one, so when none were, the scan is skipped; the answer is the same.
* matplotlib draws every changed figure after each cell (pyplot's post-execute hook), and the
  inline backend's hook right after draws each figure again to show it, then closes it. When
  that is about to happen, the first drawing is skipped: nobody sees it, and the image shown
  is drawn from scratch either way (tests/test_kernel_speedups.py compares the PNG bytes).
* ipykernel inspects the signature of the shell's run_cell for every cell: here once per function.
* jupyter_client parses the dates in every message it receives with dateutil: here with
  `datetime.fromisoformat` (the same datetimes), falling back to dateutil for anything else.
* The kernel's logger builds a record for every debug call on every message, which its handler
  then drops: its level is raised to what its handlers would emit.
* ipykernel runs IPython's static input transforms (magics, `!`, `?`) on each cell, then IPython
  runs them again on the same text. They are a function of the text and the transform lists
  only: the second run returns the first run's result.
* After every cell ipykernel flushes stdout and stderr: each flush hands two tasks to the IOPub
  thread and waits for them, even when nothing was written. Here a flush with nothing written,
  nothing pending and no timed flush under way returns at once; anything else is flushed as
  before.
* ipykernel 7 receives shell requests on a thread of their own, which hands each to the main
  thread over a socket pair and each reply back the same way, so that "subshells" (extra
  threads running cells concurrently) can be served. Nothing here asks for a subshell: the
  main thread reads the shell socket itself, as ipykernel 6 did (and ipykernel 7 still does
  without that thread), and the kernel no longer lists subshells among its features.
* ipykernel sleeps 0.5 ms before every execute_reply, a guard for clients that stop reading
  outputs when the reply comes. nbclient reads them until the kernel's idle status, which comes
  after every output of the cell either way, so the kernels here do not sleep.
"""

from __future__ import annotations

import inspect
import logging
import sys
import threading
from datetime import datetime
from typing import Any, ClassVar

from jupyter_client import jsonutil

_MEMO_SIZE = 512


def _memoize_repeated_traceback() -> None:
    from IPython.core.ultratb import AutoFormattedTB

    original = AutoFormattedTB.structured_traceback
    last: list[Any] = []  # [(key, evalue, etb, lines)]: the most recent call only

    def structured_traceback(self, etype, evalue, etb=None, tb_offset=None, context=5):
        if etype is None or evalue is None:
            return original(self, etype, evalue, etb, tb_offset, context)
        offset = self.tb_offset if tb_offset is None else tb_offset
        key = (id(self), etype, self.mode, offset, context, getattr(self, "_theme_name", None))
        if last and last[0][0] == key and last[0][1] is evalue and last[0][2] is etb:
            self.tb = etb[0] if isinstance(etb, tuple) else etb  # what the original call sets
            return list(last[0][3])
        lines = original(self, etype, evalue, etb, tb_offset, context)
        last[:] = [(key, evalue, etb, list(lines))]
        return lines

    AutoFormattedTB.structured_traceback = structured_traceback


def _reuse_highlighting() -> None:
    import pygments
    import stack_data.core
    from pygments.lexers import get_lexer_by_name

    class RangeLexer(type(get_lexer_by_name("python3"))):
        """stack_data's per-call lexer, with the marked ranges as an attribute."""

        ranges: tuple = ()

        def get_tokens(self, text):
            length = 0
            for ttype, value in super().get_tokens(text):
                if any(start <= length < end for start, end in self.ranges):
                    ttype = ttype.ExecutingNode
                length += len(value)
                yield ttype, value

    memo: dict[tuple, list[str]] = {}

    def pygmented_with_ranges(formatter, code, ranges):
        style = formatter.style
        key = (
            type(formatter),
            repr(sorted(getattr(style, "styles", {}).items(), key=str)),
            getattr(style, "background_color", None),
            repr(sorted(formatter.options.items(), key=str)),
            code,
            tuple(map(tuple, ranges)),
        )
        if key in memo:
            return list(memo[key])
        lexer = RangeLexer(stripnl=False)
        lexer.ranges = ranges
        try:
            highlighted = pygments.highlight(code, lexer, formatter)
        except Exception:  # as stack_data: prefer plain code over crashing
            highlighted = code
        lines = highlighted.splitlines()
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[key] = lines
        return list(lines)

    stack_data.core._pygmented_with_ranges = pygmented_with_ranges


def _reuse_traceback_formatters() -> None:
    import stack_data
    import stack_data.core
    from pygments.formatters import terminal256

    original_style = stack_data.core.style_with_executing_node
    styles: dict[tuple, Any] = {}

    def style_with_executing_node(style, modifier):
        if (style, modifier) not in styles:
            styles[style, modifier] = original_style(style, modifier)
        return styles[style, modifier]

    stack_data.style_with_executing_node = style_with_executing_node
    stack_data.core.style_with_executing_node = style_with_executing_node

    class Terminal256Formatter(terminal256.Terminal256Formatter):
        """pygments' formatter, made once per style class when that is all it is given (it
        keeps no state between calls to format without line numbers)."""

        made: ClassVar[dict[type, Any]] = {}

        def __new__(cls, **options):
            style = options.get("style") if list(options) == ["style"] else None
            if isinstance(style, type) and style in cls.made:
                return cls.made[style]
            return super().__new__(cls)

        def __init__(self, **options) -> None:
            if getattr(self, "_made_once", False):
                return
            super().__init__(**options)
            style = options.get("style") if list(options) == ["style"] else None
            if isinstance(style, type):
                self._made_once = True
                self.made[style] = self

    terminal256.Terminal256Formatter = Terminal256Formatter


def _skip_unneeded_module_scans() -> None:
    original = inspect.getmodule
    scanned: list[tuple[int, str] | None] = [None]  # sys.modules (size, last) at the last scan

    def getmodule(object, _filename=None):
        if inspect.ismodule(object) or hasattr(object, "__module__"):
            return original(object, _filename)
        if _filename is not None and _filename in inspect.modulesbyfile:
            return original(object, _filename)
        try:
            file = inspect.getabsfile(object, _filename)
        except (TypeError, FileNotFoundError):
            return None
        modules = sys.modules
        state = (len(modules), next(reversed(modules)))
        if file in inspect.modulesbyfile or state != scanned[0]:
            found = original(object, _filename)
            scanned[0] = (len(modules), next(reversed(modules)))
            return found
        # No module was imported since the last scan, which registered every module's file:
        # this file (a notebook cell's) is no module's.
        return _main_or_builtin(object)

    inspect.getmodule = getmodule


def _main_or_builtin(object: Any) -> Any:
    """The end of inspect.getmodule, after its sys.modules scan found nothing."""
    if not hasattr(object, "__name__"):
        return None
    for module in (sys.modules["__main__"], sys.modules["builtins"]):
        if hasattr(module, object.__name__) and getattr(module, object.__name__) is object:
            return module
    return None


def skip_drawing_before_inline_flush() -> None:
    """Call after importing matplotlib.pyplot, before a kernel registers its hooks."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or getattr(pyplot._draw_all_if_interactive, "hooklab", False):
        return
    original = pyplot._draw_all_if_interactive

    def _draw_all_if_interactive() -> None:
        if not _inline_flush_follows(pyplot, _draw_all_if_interactive):
            original()

    _draw_all_if_interactive.hooklab = True
    pyplot._draw_all_if_interactive = _draw_all_if_interactive


def _inline_flush_follows(pyplot: Any, this: Any) -> bool:
    """True if, in this post_execute, the inline backend's flush_figures runs after `this` and
    will show and close every open figure (matplotlib_inline's flush_figures with close_figures)."""
    inline = sys.modules.get("matplotlib_inline.backend_inline")
    ip = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if inline is None or ip is None or not inline.show._draw_called:
        return False
    if "inline" not in str(pyplot.get_backend()).lower():
        return False
    if not inline.InlineBackend.instance().close_figures:
        return False
    hooks = ip.events.callbacks.get("post_execute", [])
    return this in hooks and inline.flush_figures in hooks[hooks.index(this) :]


def _remember_accepted_parameters() -> None:
    from ipykernel import ipkernel

    original = ipkernel._accepts_parameters
    known: dict[tuple, dict] = {}

    def accepts_parameters(meth, param_names):
        # By the function itself (a bound method is made anew at every access): another
        # function, say one a notebook put in its place, is inspected afresh.
        key = (getattr(meth, "__func__", meth), tuple(param_names))
        if key not in known:
            known[key] = original(meth, param_names)
        return dict(known[key])

    ipkernel._accepts_parameters = accepts_parameters


def parse_date(text: str | None) -> Any:
    """jupyter_client's parse_date, with `datetime.fromisoformat` for the dates it writes."""
    if text is None or not jsonutil.ISO8601_PAT.match(text):
        return text
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return jsonutil.parse_date(text)
    return parsed if parsed.tzinfo else jsonutil.parse_date(text)


def extract_dates(obj: Any) -> Any:
    """jupyter_client's extract_dates (the dates in a message just received), with parse_date."""
    if isinstance(obj, dict):
        return {key: extract_dates(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [extract_dates(item) for item in obj]
    if isinstance(obj, str):
        return parse_date(obj)
    return obj


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


def _transform_each_cell_once() -> None:
    from IPython.core.inputtransformer2 import TransformerManager

    original = TransformerManager.transform_cell
    last: list[tuple[tuple, str]] = []  # [(key, transformed)]: the most recent call only

    def transform_cell(self, cell: str) -> str:
        key = (
            self,
            cell,
            tuple(self.cleanup_transforms),
            tuple(self.line_transforms),
            tuple(self.token_transformers),
        )
        if last and last[0][0] == key:
            return last[0][1]
        transformed = original(self, cell)
        last[:] = [(key, transformed)]
        return transformed

    TransformerManager.transform_cell = transform_cell


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


def install() -> None:
    _serve_shell_on_main_thread()
    _memoize_repeated_traceback()
    _reuse_highlighting()
    _reuse_traceback_formatters()
    _skip_unneeded_module_scans()
    _remember_accepted_parameters()
    _transform_each_cell_once()
    _skip_empty_flushes()
    _no_sleep_before_replies()
    from jupyter_client import session

    session.extract_dates = extract_dates

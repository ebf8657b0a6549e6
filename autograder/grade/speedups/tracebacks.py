"""Tracebacks formatted as IPython formats them, with less repeated work. An unfinished notebook
raises in a dozen cells, and formatting those tracebacks was most of what its kernel spent.
Installed in the kernel template; kernels inherit it.

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
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, ClassVar

from autograder.grade.speedups.base import need

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
        # The style's colours as they are, in their order: sorting and printing its ~160 token
        # types, to compare styles made apart, took ~0.5 ms, on every frame of a traceback.
        key = (
            type(formatter),
            tuple(getattr(style, "styles", {}).items()),
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


def install() -> None:
    import pygments.formatters.terminal256 as terminal256
    import stack_data
    import stack_data.core
    from IPython.core.ultratb import AutoFormattedTB

    need(AutoFormattedTB, "structured_traceback")
    need(stack_data.core, "_pygmented_with_ranges", "style_with_executing_node")
    need(stack_data, "style_with_executing_node")
    need(terminal256, "Terminal256Formatter")
    need(inspect, "getmodule", "getabsfile", "modulesbyfile")
    _memoize_repeated_traceback()
    _reuse_highlighting()
    _reuse_traceback_formatters()
    _skip_unneeded_module_scans()

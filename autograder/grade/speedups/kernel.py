"""Speed-ups installed in the kernel template (zygote.py) before it forks kernels: a kernel shows
exactly what a stock ipykernel shows (tracebacks, figures, streams), with less repeated work.

An unfinished notebook raises in a dozen cells, and formatting those tracebacks was most of what
its kernel spent; the rest is per-cell work. What is no longer repeated:

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
* ipykernel inspects the signature of the shell's run_cell for every cell: here once per function.
* ipykernel runs IPython's static input transforms (magics, `!`, `?`) on each cell, then IPython
  runs them again on the same text. They are a function of the text and the transform lists
  only: the second run returns the first run's result.
* IPython tokenizes every cell for its token transforms (`a = %magic`, `!cmd`, `obj?`, `/f x`);
  a cell without "%", "!", "?" and without a line starting with "," ";" or "/" has nothing
  they change, and is not tokenized.
* To learn whether a cell needs an event loop (top-level `await`), IPython compiles it, twice
  per cell (once asked by ipykernel, once by run_cell), before compiling it again to run it.
  A cell without the words "await" and "async" cannot need one: it is not compiled for that.

The per-message work (ipykernel's IOPub thread, flushes, dates, logging) is kernel_messaging.py's,
the figures' work figure_speedups.py's.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, ClassVar

from autograder.grade.speedups import kernel_messaging

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


# What IPython's token transforms look for, and so what a cell's text must contain for one to
# apply: "%" (a = %magic), "!" (a = !cmd, !cmd), "?" (obj?, ?obj), or a line that starts with an
# escape ("," ";" "/": autocall), after its indentation.
_TOKEN_MARKS = ("%", "!", "?")
_LINE_ESCAPES = (",", ";", "/")


def _may_need_tokens(lines: list[str]) -> bool:
    text = "".join(lines)
    if any(mark in text for mark in _TOKEN_MARKS):
        return True
    return any(line.lstrip().startswith(_LINE_ESCAPES) for line in lines)


def _tokenize_only_cells_that_may_need_it() -> None:
    from IPython.core import inputtransformer2 as it2

    original = it2.TransformerManager.do_token_transforms
    stock = [it2.MagicAssign, it2.SystemAssign, it2.EscapedCommand, it2.HelpEnd]

    def do_token_transforms(self, lines: list[str]) -> list[str]:
        # Tokenizing is most of what transforming a cell costs (~0.07 of ~0.09 ms for the
        # course's cells); a cell with none of the marks above comes back from the token
        # transforms unchanged, so it is not tokenized. Only with IPython's own transforms:
        # another one may look for anything.
        if self.token_transformers == stock and not _may_need_tokens(lines):
            return lines
        return original(self, lines)

    it2.TransformerManager.do_token_transforms = do_token_transforms


def _compile_only_cells_that_may_await() -> None:
    from IPython.core import interactiveshell

    original = interactiveshell._should_be_async

    def _should_be_async(cell: str) -> bool:
        # A cell is a coroutine only through a top-level await, async for or async with, and
        # each needs one of these words in its text (a keyword cannot be spelt otherwise).
        if isinstance(cell, str) and "await" not in cell and "async" not in cell:
            return False
        return original(cell)

    interactiveshell._should_be_async = _should_be_async


def install() -> None:
    kernel_messaging.install()
    _memoize_repeated_traceback()
    _reuse_highlighting()
    _reuse_traceback_formatters()
    _skip_unneeded_module_scans()
    _remember_accepted_parameters()
    _transform_each_cell_once()
    _tokenize_only_cells_that_may_need_it()
    _compile_only_cells_that_may_await()

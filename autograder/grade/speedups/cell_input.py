"""A cell's input handled as ipykernel and IPython handle it, without the repeats. Installed in
the kernel template; kernels inherit it.

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
"""

from __future__ import annotations

from autograder.grade.speedups.base import need


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
    from ipykernel import ipkernel
    from IPython.core import inputtransformer2, interactiveshell

    need(ipkernel, "_accepts_parameters")
    manager = inputtransformer2.TransformerManager
    need(manager, "transform_cell", "do_token_transforms")
    need(inputtransformer2, "MagicAssign", "SystemAssign", "EscapedCommand", "HelpEnd")
    need(interactiveshell, "_should_be_async")
    _remember_accepted_parameters()
    _transform_each_cell_once()
    _tokenize_only_cells_that_may_need_it()
    _compile_only_cells_that_may_await()

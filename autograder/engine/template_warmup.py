"""Work the kernel template (zygote.py) does once, before it forks kernels, that every kernel
would otherwise repeat: the imports every kernel needs (preload), and what it leaves in caches,
which each kernel inherits. None of it changes what a kernel shows
(tests/test_kernel_speedups.py compares with a stock kernel)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import types

# What every kernel needs, loaded once in the template instead of in every kernel; a batch adds
# the modules its notebooks import (the "preload" request). Not modules that register themselves
# with the running IPython at import time (ipywidgets, matplotlib_inline): imported in the
# template, where there is none, they would skip that in the kernels.
PRELOAD = (
    "IPython",
    "ipykernel.kernelapp",
    "ipykernel.debugger",
    "torch",
    "autograder.checks",
    # What every kernel still imported after the fork (a diff of sys.modules at the end of a
    # notebook): while it starts (the debugger, the history's sqlite3, tornado's asyncio loop,
    # the storemagic extension), for its first traceback, or from the course's own checks.
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.logger",
    "IPython.core.oinspect",
    "IPython.core.pylabtools",
    "IPython.extensions.storemagic",
    "IPython.utils.wildcard",
    "faulthandler",
    "sqlite3",
    "tornado.platform.asyncio",
    "zmq.utils.garbage",
    "torch._subclasses.schema_check_mode",
    "autograder.widgets.hint_texts",
)
# ipykernel makes the inline backend matplotlib's default by setting this before any notebook
# code runs; matplotlib reads it when imported, so it must be set before the preload does.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def preload() -> None:
    """Import, once, what every kernel and every notebook of the course needs."""
    import importlib

    from autograder.engine import dynamo_on_demand, kernel_command_line, kernel_speedups

    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    kernel_speedups.install()
    kernel_command_line.install()
    for module in PRELOAD:
        importlib.import_module(module)
    # Nothing above imports torch._dynamo: the kernels' optimizers then do not either.
    dynamo_on_demand.install()
    warm_traceback_caches()
    register_modules()
    use_listed_modules()


def register_modules() -> None:
    """Have `inspect` map every loaded module's file now, not in each kernel's first traceback
    (inspect.getmodule registers the modules imported since its last scan of sys.modules)."""
    import inspect

    inspect.getmodule(compile("", "<hooklab-template>", "exec"))


class _ModuleFile:
    """A loaded module's file, as IPythonKernel lists them: all it reads of a module."""

    __slots__ = ("__file__",)

    def __init__(self, file: str) -> None:
        self.__file__ = file


class _SysForKernelInit(types.ModuleType):
    """What ipykernel.ipkernel calls `sys` while a kernel is made: the real sys, except that its
    `modules` are the stand-ins listed in the template."""

    def __init__(self, modules: dict) -> None:
        super().__init__("sys")
        self.modules = modules

    def __getattr__(self, name: str):
        return getattr(sys, name)


_listed: dict[int, _ModuleFile] = {}
_listed_from = -1  # len(sys.modules) when _listed was made


def list_loaded_modules() -> None:
    """In the template, before a fork: the files of the loaded modules, for the kernel to list.

    IPythonKernel.__init__ lists the file of every loaded module (for its debugger). In a forked
    kernel that touches ~3000 module objects and their file names, copying the memory page of
    each (about 2900 page faults, some 8 ms per kernel). Listed here once, in fresh objects that
    sit together on a few pages, the kernel reads those instead and gets the same file names.
    Listed again only when the template has imported modules since.
    """
    global _listed_from
    if len(sys.modules) == _listed_from:
        return
    files = [getattr(module, "__file__", None) for module in list(sys.modules.values())]
    # fsdecode(fsencode()) copies each name exactly, so the copies sit together.
    copies = [_ModuleFile(os.fsdecode(os.fsencode(file))) for file in files if file]
    _listed.clear()
    _listed.update(enumerate(copies))
    _listed_from = len(sys.modules)


def use_listed_modules() -> None:
    """Make IPythonKernel.__init__ read the template's list (list_loaded_modules), if any."""
    from ipykernel import ipkernel

    original = ipkernel.IPythonKernel.__init__

    def __init__(self, **kwargs) -> None:
        if not _listed:
            return original(self, **kwargs)
        ipkernel.sys = _SysForKernelInit(_listed)
        try:
            original(self, **kwargs)
        finally:
            ipkernel.sys = sys

    ipkernel.IPythonKernel.__init__ = __init__


def warm_figure_rendering() -> None:
    """Draw one small figure with Agg, outside pyplot (whose backend the kernel chooses), so that
    fonts and text layout are loaded before the fork rather than in every kernel's first plot."""
    if "matplotlib" not in sys.modules:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 2))
    axes = figure.add_subplot()
    axes.imshow([[0.0, 1.0], [1.0, 0.0]], cmap="gray")
    axes.set_title("warm-up")
    figure.colorbar(axes.images[0])
    FigureCanvasAgg(figure).print_png(io.BytesIO())


def read_course_data() -> None:
    """Read, once, the data file a course notebook loads in every kernel, if its module is
    loaded here: scikit-learn's digits, which the CNN notebook parses from a text file (most of
    what its data cell costs). The kernels get the same values (autograder/digits.py)."""
    digits = sys.modules.get("autograder.digits")
    if digits is None:
        return
    with contextlib.suppress(OSError, ValueError):  # then each kernel fails to, as it would
        digits.bundled_digits_rows()


def warm_traceback_caches() -> None:
    """Format, once, a traceback through the torch code student errors pass through.

    IPython's traceback formatter parses the source of every file in a traceback and caches the
    result per file. torch's module.py is large, and an unfinished notebook raises through it in
    a dozen cells: in a fresh kernel that parsing is most of its CPU time. Parsed here, before
    the fork, every kernel starts with the cache filled; the tracebacks it prints are unchanged.
    """
    import torch
    from IPython.core.ultratb import AutoFormattedTB

    class Stub(torch.nn.Module):
        def forward(self, x):
            raise NotImplementedError

    def fail_in_hook(module, args):
        raise NotImplementedError

    def fail_after(module, args, output):
        raise NotImplementedError

    def hooked(**hooks):
        module = torch.nn.Linear(1, 1)
        for kind, hook in hooks.items():
            getattr(module, f"register_{kind}")(hook)
        return module

    def backward_through(module):
        module(torch.ones(1, 1, requires_grad=True)).sum().backward()

    stub = Stub()
    weight = torch.ones(1, requires_grad=True)
    weight.register_hook(lambda grad: fail_in_hook(None, grad))
    from IPython.core.interactiveshell import InteractiveShell

    # In a kernel's colours: a frame's highlighting is remembered per style too.
    formatter = AutoFormattedTB(mode="Context", theme_name=InteractiveShell.colors.default_value)
    # Each raises from another line of torch's module code (a frame's highlighting is
    # remembered per line), as the notebooks' unfinished hooks and shape mistakes do.
    for fail in (
        lambda: stub(torch.ones(1)),
        lambda: torch.nn.Sequential(stub)(torch.ones(1)),
        lambda: hooked(forward_pre_hook=fail_in_hook)(torch.ones(1)),
        lambda: hooked(forward_hook=fail_after)(torch.ones(1)),
        lambda: backward_through(hooked(full_backward_hook=fail_after)),
        lambda: backward_through(hooked(full_backward_pre_hook=fail_in_hook)),
        lambda: (weight * 2).backward(),
        lambda: stub.apply(lambda module: fail_in_hook(module, None)),
        lambda: torch.nn.Linear(2, 1)(torch.ones(3)),
        lambda: torch.nn.Conv2d(1, 1, 3)(torch.ones(2, 1, 1)),
    ):
        try:
            fail()
        except (NotImplementedError, RuntimeError):
            formatter.structured_traceback(*sys.exc_info())

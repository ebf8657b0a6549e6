"""Work the kernel template (template.py) does once, before it forks kernels, that every kernel
would otherwise repeat: the imports every kernel needs (preload), and what it leaves in caches,
which each kernel inherits, through the libraries' own functions. None of it changes what a
kernel shows (tests/grade/speedups/test_kernel_speedups.py compares with a stock kernel)."""

from __future__ import annotations

import contextlib
import io
import os
import sys

# What every kernel needs, loaded once in the template instead of in every kernel; a batch adds
# the modules its notebooks import (the "preload" request). Not modules that register themselves
# with the running IPython at import time (ipywidgets, matplotlib_inline): imported in the
# template, where there is none, they would skip that in the kernels.
PRELOAD = (
    "IPython",
    "ipykernel.kernelapp",
    "ipykernel.debugger",
    "torch",
    "autograder.exercises.kit.notebook",
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
    "autograder.widgets.hints",
)
# The packages of PRELOAD that only a course whose notebooks use torch needs (Hooklab's checks
# use it too): in another course a kernel starts without torch, as under stock nbgrader
# (`'torch' in sys.modules` is False there), and the template saves torch's second of CPU and
# 145 MB. settings.course_uses_torch looks for imports of these.
TORCH_PACKAGES = ("torch", "autograder")
# ipykernel makes the inline backend matplotlib's default by setting this before any notebook
# code runs; matplotlib reads it when imported, so it must be set before the preload does.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def preload(control_dir: str | None = None, *, torch: bool = True) -> dict:
    """Import, once, what every kernel and every notebook of the course needs (after the
    template's speed-ups are installed); without `torch`, not the modules of TORCH_PACKAGES.
    With `control_dir`, and the kept-traceback-sources speed-up installed, the traceback warm-up
    (through torch's code) starts from the sources a previous run parsed (and keeps what it
    parsed for the next one). Returns how many files it read from there and whether it is
    writing a new file."""
    import importlib

    from autograder.grade.speedups import traceback_cache

    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    for module in PRELOAD:
        if torch or module.partition(".")[0] not in TORCH_PACKAGES:
            importlib.import_module(module)
    keep = torch and bool(control_dir) and traceback_cache.installed()
    read = traceback_cache.read(control_dir) if keep else set()
    if torch:
        warm_traceback_caches()
    read_kernel_stack_sources()
    register_modules()
    writing = keep and traceback_cache.write_if_new(control_dir, read)
    return {"read": len(read), "writing": writing}


# The modules whose code is on a kernel's stack while a cell runs, and those torch.manual_seed
# runs through (see read_kernel_stack_sources).
KERNEL_STACK_MODULES = (
    "runpy",
    "__main__",  # the template's own code (template.py), and isolation.py's when sandboxed
    "autograder.grade.kernels.template",
    "autograder.grade.kernels.forked",
    "autograder.grade.sandbox.isolation",
    "asyncio.base_events",
    "asyncio.events",
    "tornado.platform.asyncio",
    "ipykernel.kernelapp",
    "ipykernel.kernelbase",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython.core.interactiveshell",
    "IPython.core.async_helpers",
    "torch.random",
    "torch.cuda",
    "torch.cuda.random",
    "torch.xpu",
    "torch.xpu.random",
    "torch.mtia",
)


def read_kernel_stack_sources() -> None:
    """Read into linecache, once, the source of the code on a kernel's stack while a cell runs.

    torch.manual_seed, which the notebooks and checks call, queues a seeding call for each
    accelerator torch has not started (CUDA, XPU, MTIA) together with traceback.format_stack(),
    which reads the source line of every frame: a kernel's first call read some fifteen files
    (~4 ms). linecache checks each file's size and time before it uses what it holds, as it
    would in the kernel.
    """
    import linecache

    for name in KERNEL_STACK_MODULES:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            linecache.getlines(file)


def register_modules() -> None:
    """Have `inspect` map every loaded module's file now, not in each kernel's first traceback
    (inspect.getmodule registers the modules imported since its last scan of sys.modules)."""
    import inspect

    inspect.getmodule(compile("", "<hooklab-template>", "exec"))


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
    # remembered per line), as the notebooks' unfinished hooks and shape mistakes do. The last
    # passes through torch.nn.functional, whose 7000 lines take a kernel ~0.3 s to parse for
    # its first traceback there (an in-place ReLU on a leaf, a wrong interpolate size, ...).
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
        lambda: torch.nn.ReLU(inplace=True)(weight),
    ):
        try:
            fail()
        except (NotImplementedError, RuntimeError):
            formatter.structured_traceback(*sys.exc_info())


MADV_COLLAPSE = 25  # linux/mman.h, since Linux 6.1
HUGE_PAGE = 2 << 20


def huge_pages() -> None:
    """Back what the template allocated (its heap and anonymous mappings, about 220 MB once
    torch is in) with 2 MiB pages, once its imports are done. Every process forked from it
    (kernels, verifiers, and the verifiers' children, one per answer cell) then copies and
    frees one page-table entry per 2 MiB it never writes, not 512; one it writes is split
    first. Where the system cannot (an older Linux, huge pages turned off), nothing changes."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            anonymous = len(fields) < 6 or fields[5] == "[heap]"
            if "w" not in fields[1] or not anonymous:
                continue
            start, end = (int(address, 16) for address in fields[0].split("-"))
            start = (start + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
            end &= ~(HUGE_PAGE - 1)
            if end > start:
                libc.madvise(start, end - start, MADV_COLLAPSE)

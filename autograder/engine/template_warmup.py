"""Work the kernel template (zygote.py) does once, before it forks kernels, that every kernel
would otherwise repeat: what it leaves in caches is inherited by each kernel. None of it changes
what a kernel shows (tests/test_kernel_speedups.py compares with a stock kernel)."""

from __future__ import annotations

import io
import sys


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

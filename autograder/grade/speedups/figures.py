"""Speed-ups for figures, installed in a kernel template once it has imported matplotlib.pyplot
(role "figures"), before it draws its warm-up figure and forks kernels. A kernel's figures come
out byte for byte as in a stock kernel (tests/grade/speedups/test_kernel_speedups.py compares
the PNG bytes):

* matplotlib's fonts read the glyphs they need from their font file as they need them, each
  read a seek and a read on the open file, through Python. In the template each font file is
  read into memory once, and the fonts made there read from that copy: laying out a title
  takes ~0.5 ms instead of ~1.8 ms, and the CNN notebook's figures draw in ~11% less time.
  Kernels inherit those fonts. matplotlib empties its font cache in every forked child, as
  forked processes sharing an open file's position read each other's glyphs; a font in
  memory shares nothing with any other process.
* With tight bounding boxes a figure is drawn twice, the first time only to lay it out; its
  images are not resampled for that pass.
* matplotlib draws every changed figure after each cell (pyplot's post-execute hook), and the
  inline backend's hook right after draws each figure again to show it, then closes it. When
  that is about to happen, the first drawing is skipped: nobody sees it, and the image shown
  is drawn from scratch either way.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib.util
import io
import os
import sys
import threading
from typing import Any

from autograder.grade.speedups.base import Missing, need


def install_fonts_in_memory() -> None:
    font_manager = sys.modules.get("matplotlib.font_manager")
    if font_manager is None:
        raise Missing("matplotlib.font_manager is not imported")
    need(font_manager, "_get_font")
    need(font_manager._get_font, "__wrapped__", "cache_clear")
    _read_fonts_from_memory()


def install_drawing() -> None:
    pyplot, image = sys.modules.get("matplotlib.pyplot"), sys.modules.get("matplotlib.image")
    if pyplot is None or image is None:
        raise Missing("matplotlib.pyplot is not imported")
    from matplotlib.backend_bases import RendererBase

    need(pyplot, "_draw_all_if_interactive", "get_backend")
    _need_inline_backend_source("show._draw_called", "def flush_figures", "close_figures")
    need(image.AxesImage, "draw")
    need(RendererBase, "draw_image")
    _skip_drawing_before_inline_flush()
    _skip_images_in_layout_passes()


def _need_inline_backend_source(*texts: str) -> None:
    """matplotlib_inline must not be imported in the template (it registers itself with the
    running IPython on import, and there is none yet): its backend's source is read instead,
    found without importing the package (find_spec of a submodule would import it)."""
    spec = importlib.util.find_spec("matplotlib_inline")
    source = ""
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "backend_inline.py")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as file:
                source = file.read()
    absent = [text for text in texts if text not in source]
    if absent:
        raise Missing(f"matplotlib_inline.backend_inline has no {', '.join(absent)}")


class _FontFile(io.BytesIO):
    """A font file's bytes, named like the file (matplotlib reports a font's file by its name)."""

    name = ""


def _read_fonts_from_memory() -> None:
    font_manager = sys.modules.get("matplotlib.font_manager")
    if font_manager is None or getattr(font_manager._get_font, "hooklab", False):
        return
    from_files = font_manager._get_font  # matplotlib's cache, emptied in every forked child
    make_font = from_files.__wrapped__
    made: dict[tuple, Any] = {}  # filled by the single-threaded template; kernels inherit it

    def _get_font(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        if key in made:
            return made[key]
        if threading.active_count() > 1:
            # `open` stands in for the built-in only while a font is made, which is safe in
            # a single-threaded template only: with threads (a kernel), fonts come as usual.
            return from_files(*args, **kwargs)
        with _files_read_into_memory():
            made[key] = make_font(*args, **kwargs)
        return made[key]

    def cache_clear() -> None:
        made.clear()
        from_files.cache_clear()

    _get_font.cache_clear = cache_clear
    _get_font.hooklab = True
    font_manager._get_font = _get_font


@contextlib.contextmanager
def _files_read_into_memory():
    """Files opened for binary reading come as a copy of their bytes. matplotlib 3.11's font
    class opens its file with io.open; the built-in open stands in too, for releases that
    call that instead."""
    real_io_open, real_builtin_open = io.open, builtins.open

    def open_into_memory(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode != "rb" or args or kwargs:
            return real_io_open(file, mode, *args, **kwargs)
        with real_io_open(file, "rb") as on_disk:
            copy = _FontFile(on_disk.read())
            copy.name = on_disk.name
        return copy

    io.open = builtins.open = open_into_memory
    try:
        yield
    finally:
        io.open, builtins.open = real_io_open, real_builtin_open


def _skip_drawing_before_inline_flush() -> None:
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


def _skip_images_in_layout_passes() -> None:
    """With bbox_inches="tight", as the inline backend prints, matplotlib draws each figure twice:
    once with the renderer's draw_* methods replaced by no-ops, to learn where everything goes,
    then for real. An image still resamples itself in that first pass, for a draw_image that
    does nothing; here it skips that. Its place on the figure comes from its extent, not from
    the pixels (tests/grade/speedups/test_kernel_speedups.py compares the PNG bytes).
    """
    image = sys.modules.get("matplotlib.image")
    if image is None or getattr(image.AxesImage.draw, "hooklab", False):
        return
    from matplotlib.backend_bases import RendererBase

    original = image.AxesImage.draw

    @functools.wraps(original)  # keeps matplotlib's marks on draw methods
    def draw(self, renderer) -> None:
        if getattr(renderer.draw_image, "__wrapped__", None) is RendererBase.draw_image:
            self.stale = False  # as the full draw leaves it
            return
        original(self, renderer)

    draw.hooklab = True
    image.AxesImage.draw = draw

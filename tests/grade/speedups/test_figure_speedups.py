"""The figure speed-ups of a kernel template (autograder/grade/speedups/figures.py): fonts made in
the template read from memory, name their file as stock fonts do, and stay correct in the kernels
forked from it, which draw text side by side. That the PNG bytes equal a stock kernel's is
tests/grade/speedups/test_kernel_speedups.py's."""

import subprocess
import sys
import textwrap

# Run in a process of its own: fonts are made in memory only in a single-threaded process (a
# template), and pytest's may have threads.
TEMPLATE = textwrap.dedent(
    """
    import hashlib, os, sys
    import matplotlib
    matplotlib.use("agg")
    import matplotlib.pyplot  # noqa: F401 (what a template imports for plotting notebooks)
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    if sys.argv[1] == "memory":
        from autograder.grade.speedups import figures
        figures.install_fonts_in_memory()
        figures.install_drawing()
    path = font_manager.findfont("DejaVu Sans")
    font = font_manager.get_font(path)

    def opened(fd):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir itself had open
            return ""

    print("font file open:", any(opened(fd).endswith(".ttf") for fd in os.listdir("/proc/self/fd")))
    print("named like a stock font:", font.fname == FT2Font(path).fname)

    TEXTS = ["Grad-CAM of block2 (label->predicted)", "d score / d block1 conv output",
             "0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz"]

    def drawn(text, size):
        font = font_manager.get_font(path)
        font.clear()
        font.set_size(size, 72)
        font.set_text(text, 0)
        font.draw_glyphs_to_bitmap()
        return hashlib.sha256(font.get_image().tobytes()).hexdigest()

    expected = {(text, size): drawn(text, size) for text in TEXTS for size in (7, 10, 13)}
    children = []
    for child in range(2):
        pid = os.fork()
        if pid == 0:  # a kernel: draws the same texts as its sibling, at the same time
            inherited = font_manager.get_font(path) is font
            wrong = 0
            try:
                for turn in range(600):
                    key = list(expected)[(turn + child) % len(expected)]
                    wrong += drawn(*key) != expected[key]
            except RuntimeError:  # "failed to load glyph": it read its sibling's bytes
                wrong += 1
            os._exit(0 if wrong == 0 and inherited == (sys.argv[1] == "memory") else 1)
        children.append(pid)
    print("children drew every glyph right:",
          all(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 for pid in children))
    """
)


def _template(fonts: str) -> str:
    run = subprocess.run(
        [sys.executable, "-c", TEMPLATE, fonts], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_template_fonts_read_from_memory_and_serve_forked_kernels_drawing_side_by_side():
    assert _template("memory").splitlines() == [
        "font file open: False",
        "named like a stock font: True",
        "children drew every glyph right: True",
    ]


def test_stock_fonts_read_from_their_open_file_and_forked_children_make_their_own():
    # What the speed-up replaces, and why matplotlib empties its font cache in forked children.
    assert _template("stock").splitlines() == [
        "font file open: True",
        "named like a stock font: True",
        "children drew every glyph right: True",
    ]

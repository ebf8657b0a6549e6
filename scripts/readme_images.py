"""Redraw the README's CNN pictures (docs/images/) with the cnn_hooks notebook's own code.

Runs the solution notebook's code cells in this process, with matplotlib drawing off-screen, and
saves the figure that cell `forward_demo` draws (block2's input and output feature maps) and
the one `grad_cam_demo` draws. Run it after changing the notebook or its weights:
`.venv/bin/python scripts/readme_images.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ["MPLBACKEND"] = "Agg"

import matplotlib.pyplot as plt  # after MPLBACKEND is set

from autograder import notebooks

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "solutions" / "cnn_hooks" / "cnn_hooks.ipynb"
IMAGES = {"forward_demo": "feature_maps.png", "grad_cam_demo": "grad_cam_heatmaps.png"}


def main() -> None:
    namespace = {"__name__": "__main__"}
    for cell in notebooks.read(NOTEBOOK).cells:
        if cell.cell_type != "code":
            continue
        exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)
        if cell.id in IMAGES:
            path = ROOT / "docs" / "images" / IMAGES[cell.id]
            # No "Software" entry: the PNG then changes only when the picture does.
            plt.gcf().savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
            print(f"wrote {path.relative_to(ROOT)}")
        plt.close("all")


if __name__ == "__main__":
    main()

"""Put the widget cells into the solution notebooks: a progress panel after the set-up cell, a
hint cell right above each exercise's answer cell and, in cnn_hooks, the feature-map explorer
after the forward-hook demo. Running it again rewrites those cells in place (same ids) and
touches no other cell. Then `python -m autograder build` regenerates notebooks/.

The hints themselves are in each exercise's module (HINTS); a hint cell only names its exercise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import course, notebooks  # noqa: E402
from autograder.widgets.hints import all_hints  # noqa: E402

HINTS = all_hints()

EXPLORER_LAYERS = ["block1.0", "block1", "pool", "block2.0", "block2"]


def exercises(nb) -> list[str]:
    """Grade ids of the answer cells that have a check cell, in notebook order."""
    ids = {cell.id for cell in nb.cells}
    return [
        cell.id
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("solution") and f"{cell.id}_test" in ids
    ]


def progress_cell(grade_ids: list[str]):
    listed = "".join(f"    {json.dumps(grade_id)},\n" for grade_id in grade_ids)
    return notebooks.demo(
        "progress",
        "# Your progress: this panel updates itself each time a check cell runs.\n"
        "from autograder.widgets import show_progress\n\n"
        f"show_progress([\n{listed}])",
    )


def hints_cell(grade_id: str):
    return notebooks.demo(
        f"{grade_id}_hints",
        "# Stuck? Run this cell, then click the button: each click shows one more hint.\n"
        "from autograder.widgets import show_hints\n\n"
        f"show_hints({json.dumps(grade_id)})",
    )


def explorer_cell():
    return notebooks.demo(
        "feature_map_explorer",
        "# Explore: choose a layer, a channel and an image. The maps come from forward hooks,\n"
        "# one per layer, removed right after one forward pass. `pool` runs twice per pass.\n"
        "from autograder.widgets import feature_map_explorer\n\n"
        "examples = torch.stack([test_x[test_y == d][0] for d in range(10)])  # one per digit\n"
        "feature_map_explorer(\n"
        f"    model, examples, {json.dumps(EXPLORER_LAYERS)}, labels=range(10)\n)",
    )


def add_widget_cells(assignment: str) -> None:
    path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    nb = notebooks.read(path)
    ours = {"progress", "feature_map_explorer"} | {f"{gid}_hints" for gid in HINTS}
    nb.cells = [cell for cell in nb.cells if cell.id not in ours]
    grade_ids = exercises(nb)
    missing = set(grade_ids) - set(HINTS)
    if missing:
        raise SystemExit(f"{assignment}: no hints written for {sorted(missing)}")
    cells = []
    for cell in nb.cells:
        if cell.id in grade_ids:
            cells.append(hints_cell(cell.id))
        cells.append(cell)
        if cell.id == "setup":
            cells.append(progress_cell(grade_ids))
        if assignment == "cnn_hooks" and cell.id == "forward_demo":
            cells.append(explorer_cell())
    nb.cells = cells
    notebooks.write(nb, path)
    print(f"{assignment}: progress panel, {len(grade_ids)} hint cells")


if __name__ == "__main__":
    for name in sys.argv[1:] or course.assignments():
        add_widget_cells(name)

"""Notebook widgets: hints revealed one at a time, a live progress panel, a feature-map explorer.

Importing this package is cheap: ipywidgets and matplotlib are imported only when a widget is
shown. Where no widget can be drawn (nbconvert, nbgrader autograde, plain Python), each widget
leaves a short text instead.
"""

from autograder.widgets.explorer import feature_map_explorer
from autograder.widgets.hints import show_hints
from autograder.widgets.progress import show_progress

__all__ = ["feature_map_explorer", "show_hints", "show_progress"]

"""The feature-map explorer: pick a layer, a channel and an input digit, see that feature map.

The maps are captured once, with forward hooks (one per layer, removed right after), for all
images; moving a slider only redraws. A module called more than once per forward pass (a shared
pooling layer) gets one entry per call. Figures are drawn with matplotlib's object API, not
pyplot, so nothing leaks into the cell's own output.
"""

from __future__ import annotations

import io

import torch
from torch import nn

from autograder.widgets import frontend


def capture_feature_maps(
    model: nn.Module, images: torch.Tensor, layer_names: list[str]
) -> dict[str, list[torch.Tensor]]:
    """{layer name: [its output for each call, in call order]} for one forward pass of `images`.

    Outputs are cloned: an in-place operation later in the pass must not change what we keep.
    """
    outputs: dict[str, list[torch.Tensor]] = {name: [] for name in layer_names}
    handles = []

    def keep(name):
        def hook(module, input, output):
            outputs[name].append(output.detach().clone())

        return hook

    try:
        for name in layer_names:
            handles.append(model.get_submodule(name).register_forward_hook(keep(name)))
        with torch.no_grad():
            model(images)
    finally:
        for handle in handles:
            handle.remove()
    return outputs


class FeatureMapExplorer:
    """Feature maps of `images` (N, 1, H, W) at each named layer, and how to draw one."""

    def __init__(self, model, images, layer_names, labels=None) -> None:
        captured = capture_feature_maps(model, images, layer_names)
        # One view per (layer, call); a module called twice shows up as "pool #1", "pool #2".
        self.views: dict[str, torch.Tensor] = {}
        for name, calls in captured.items():
            if not calls:
                raise ValueError(f"layer {name!r} did not run in the forward pass")
            for index, maps in enumerate(calls):
                if maps.dim() != 4:
                    raise ValueError(
                        f"layer {name!r} gives shape {tuple(maps.shape)}, not (N, C, H, W)"
                    )
                label = name if len(calls) == 1 else f"{name} #{index + 1}"
                self.views[label] = maps
        self.images = images.detach()
        self.labels = None if labels is None else [int(label) for label in labels]

    def channels(self, view: str) -> int:
        return self.views[view].shape[1]

    def feature_map(self, view: str, channel: int, digit: int) -> torch.Tensor:
        return self.views[view][digit, channel]

    def png(self, view: str, channel: int, digit: int) -> bytes:
        """The input image next to the chosen feature map, as PNG bytes."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5.2, 2.6))
        left, right = fig.subplots(1, 2)
        name = (
            f"digit {digit}"
            if self.labels is None
            else f"image {digit} (label {self.labels[digit]})"
        )
        left.imshow(self.images[digit, 0].numpy(), cmap="gray")
        left.set_title(name, fontsize=9)
        shown = right.imshow(self.feature_map(view, channel, digit).numpy(), cmap="viridis")
        right.set_title(f"{view}, channel {channel}", fontsize=9)
        fig.colorbar(shown, ax=right, fraction=0.046)
        for ax in (left, right):
            ax.axis("off")
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90)
        return buffer.getvalue()

    def fallback_text(self) -> str:
        views = ", ".join(f"{view} ({self.channels(view)} channels)" for view in self.views)
        return (
            f"Feature-map explorer for {len(self.images)} images; layers: {views}. "
            "Open this notebook in JupyterLab to choose a layer, a channel and an image."
        )


class ExplorerPanel:
    """The explorer as a widget: layer dropdown, channel and image sliders, the picture."""

    def __init__(self, explorer: FeatureMapExplorer) -> None:
        import ipywidgets as widgets

        self.explorer = explorer
        first = next(iter(explorer.views))
        self.layer = widgets.Dropdown(
            options=list(explorer.views), value=first, description="layer"
        )
        self.channel = widgets.IntSlider(
            min=0, max=explorer.channels(first) - 1, description="channel"
        )
        self.digit = widgets.IntSlider(min=0, max=len(explorer.images) - 1, description="image")
        self.image = widgets.Image(format="png")
        self.layer.observe(self._layer_changed, names="value")
        self.channel.observe(self._redraw, names="value")
        self.digit.observe(self._redraw, names="value")
        self._redraw()
        controls = widgets.VBox([self.layer, self.channel, self.digit])
        self.widget = widgets.HBox([controls, self.image])
        self.widget.add_class("hooklab-explorer")

    def _layer_changed(self, _change=None) -> None:
        # Layers differ in channel count; a lower max also pulls the slider's value down.
        self.channel.max = self.explorer.channels(self.layer.value) - 1
        self._redraw()

    def _redraw(self, _change=None) -> None:
        self.image.value = self.explorer.png(self.layer.value, self.channel.value, self.digit.value)


def feature_map_explorer(model, images, layer_names, labels=None) -> None:
    """Show the feature maps of `images` at `layer_names` with a layer dropdown and channel and
    image sliders; `labels` (optional) are shown next to each image."""
    explorer = FeatureMapExplorer(model, images, layer_names, labels)
    frontend.show(lambda: ExplorerPanel(explorer).widget, explorer.fallback_text())

"""The feature-map explorer: pick a layer, a channel and an input digit, see that feature map.

The maps are captured once, with forward hooks (one per layer, removed right after), for all
images; moving a slider only redraws. A module called more than once per forward pass (a shared
pooling layer) gets one entry per call. The explorer opens on the first layer's channel with the
widest range of values for the first image, never on a flat, all-zero one. The picture is built
as an array and saved as a PNG (no pyplot figure, so nothing leaks into the cell's own output,
and a redraw takes milliseconds).
"""

from __future__ import annotations

import io

import numpy as np
import torch
from torch import nn

from autograder.i18n import _
from autograder.widgets import frontend

PICTURE_HEIGHT = 176  # px; divisible by the map sizes of the CNN notebook (16, 8, 4)


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

    def liveliest_channel(self, view: str, digit: int) -> int:
        """The channel whose map of image `digit` spreads over the widest range: one that shows
        something (a ReLU layer may hold channels that are 0 everywhere)."""
        maps = self.views[view][digit]
        spread = maps.amax(dim=(1, 2)) - maps.amin(dim=(1, 2))
        return int(spread.argmax())

    def caption(self, view: str, channel: int, digit: int) -> str:
        values = self.feature_map(view, channel, digit)
        if self.labels is None:
            image = _("image {digit}").format(digit=digit)
        else:
            image = _("image {digit} (label {label})").format(digit=digit, label=self.labels[digit])
        low, high = values.min().item(), values.max().item()
        if low == high:
            return _(
                "{image} | {layer}, channel {channel}: {value} everywhere, so the map is one "
                "flat colour: this channel does not respond to this image"
            ).format(image=image, layer=view, channel=channel, value=f"{low:.3g}")
        return _(
            "{image} | {layer}, channel {channel}: values from {low} (dark) to {high} (yellow)"
        ).format(image=image, layer=view, channel=channel, low=f"{low:.3g}", high=f"{high:.3g}")

    def png(self, view: str, channel: int, digit: int) -> bytes:
        """The input image next to the chosen feature map, both enlarged to the same height
        with every pixel kept square (so a 4 x 4 map shows as 4 x 4 blocks), as PNG bytes."""
        from matplotlib import colormaps
        from matplotlib.image import imsave

        image = _enlarged(self.images[digit, 0], colormaps["gray"])
        feature_map = _enlarged(self.feature_map(view, channel, digit), colormaps["viridis"])
        gap = np.ones((PICTURE_HEIGHT, 12, 4))
        buffer = io.BytesIO()
        imsave(buffer, np.concatenate([image, gap, feature_map], axis=1), format="png")
        return buffer.getvalue()

    def fallback_text(self) -> str:
        views = ", ".join(
            _("{layer} ({count} channels)").format(layer=view, count=self.channels(view))
            for view in self.views
        )
        return _(
            "Feature-map explorer for {count} images; layers: {layers}. Open this notebook in "
            "JupyterLab to choose a layer, a channel and an image."
        ).format(count=len(self.images), layers=views)


class ExplorerPanel:
    """The explorer as a widget: layer dropdown, channel and image sliders, the picture."""

    def __init__(self, explorer: FeatureMapExplorer) -> None:
        import ipywidgets as widgets

        self.explorer = explorer
        first = next(iter(explorer.views))
        self.layer = widgets.Dropdown(
            options=list(explorer.views), value=first, description=_("layer")
        )
        self.channel = widgets.IntSlider(
            min=0,
            max=explorer.channels(first) - 1,
            value=explorer.liveliest_channel(first, 0),
            description=_("channel"),
        )
        self.digit = widgets.IntSlider(min=0, max=len(explorer.images) - 1, description=_("image"))
        self.image = widgets.Image(format="png")
        self.caption = widgets.HTML()
        self.layer.observe(self._layer_changed, names="value")
        self.channel.observe(self._redraw, names="value")
        self.digit.observe(self._redraw, names="value")
        self._redraw()
        controls = widgets.VBox([self.layer, self.channel, self.digit])
        self.widget = widgets.HBox([controls, widgets.VBox([self.image, self.caption])])
        self.widget.add_class("hooklab-explorer")

    def _layer_changed(self, _change=None) -> None:
        # Layers differ in channel count; a lower max also pulls the slider's value down.
        self.channel.max = self.explorer.channels(self.layer.value) - 1
        self._redraw()

    def _redraw(self, _change=None) -> None:
        chosen = (self.layer.value, self.channel.value, self.digit.value)
        self.image.value = self.explorer.png(*chosen)
        self.caption.value = self.explorer.caption(*chosen)


def feature_map_explorer(model, images, layer_names, labels=None) -> None:
    """Show the feature maps of `images` at `layer_names` with a layer dropdown and channel and
    image sliders; `labels` (optional) are shown next to each image."""
    explorer = FeatureMapExplorer(model, images, layer_names, labels)
    frontend.show(lambda: ExplorerPanel(explorer).widget, explorer.fallback_text())


def _enlarged(values: torch.Tensor, colormap) -> np.ndarray:
    """(h, w) values -> (PICTURE_HEIGHT, w * k, 4) RGBA by nearest-neighbour enlargement."""
    values = values.detach().double()
    low, high = values.min(), values.max()
    scaled = (values - low) / (high - low) if high > low else torch.zeros_like(values)
    factor = max(1, PICTURE_HEIGHT // values.shape[0])
    pixels = scaled.numpy().repeat(factor, axis=0).repeat(factor, axis=1)
    padded = np.zeros((PICTURE_HEIGHT, pixels.shape[1]))
    padded[: pixels.shape[0]] = pixels
    return colormap(padded)

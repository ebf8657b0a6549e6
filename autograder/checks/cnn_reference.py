"""Ground truth for the CNN notebook's checks: a hook-free forward, and diagnosing comparisons."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.tolerances import close

CLONE_NAMES = {"block1.0": "block1.1", "block2.0": "block2.1"}  # conv -> the in-place ReLU after it


def manual_forward(model: nn.Module, x: torch.Tensor):
    """Every named layer's outputs (one per call) and inputs, computed with functional ops only.

    No module is called, so no hook can run. The ReLUs here are not in place, so each conv output
    stays its own tensor; the graph is kept, for torch.autograd.grad.
    """
    conv1, conv2, fc = model.block1[0], model.block2[0], model.fc
    c1 = F.conv2d(x, conv1.weight, conv1.bias, padding=conv1.padding)
    r1 = torch.relu(c1)
    p1 = F.max_pool2d(r1, 2)
    c2 = F.conv2d(p1, conv2.weight, conv2.bias, padding=conv2.padding)
    r2 = torch.relu(c2)
    p2 = F.max_pool2d(r2, 2)
    logits = F.linear(p2.flatten(1), fc.weight, fc.bias)
    outputs = {
        "block1.0": [c1], "block1.1": [r1], "block1": [r1], "pool": [p1, p2],
        "block2.0": [c2], "block2.1": [r2], "block2": [r2], "fc": [logits],
    }  # fmt: skip
    inputs = {"block1.0": x, "block1": x, "block2.0": p1, "block2": p1, "fc": p2.flatten(1)}
    return outputs, inputs, logits


def hooks_left(model: nn.Module) -> list[str]:
    """The modules of `model` that still hold a hook, as 'name (kinds)'."""
    left = []
    for name, module in model.named_modules():
        kinds = {
            "forward": module._forward_hooks,
            "forward pre": module._forward_pre_hooks,
            "backward": module._backward_hooks,
            "backward pre": module._backward_pre_hooks,
        }
        found = [kind for kind, hooks in kinds.items() if hooks]
        if found:
            left.append(f"{name or 'the model itself'} ({', '.join(found)})")
    return left


def require_no_hooks(model: nn.Module, where: str) -> None:
    left = hooks_left(model)
    if left:
        raise CheckFailed(
            f"{where}, hooks are still registered after your function returned: "
            f"{'; '.join(left)}. Keep every handle that register_*_hook returns and call "
            "handle.remove() before returning (in a `finally:` block, so it also happens when "
            "the forward fails); otherwise the hooks keep firing on every later call."
        )


def in_check(where: str, fn, *args):
    """Run `fn(*args)` (student code or a comparison); prefix a failure with where it happened."""
    try:
        return fn(*args)
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(f"{where}: {failure.message}") from None


def check_dict_keys(got: object, names: list[str], what: str, values: str) -> None:
    if not isinstance(got, dict):
        raise CheckFailed(
            f"{what} should return a dict {{layer name: {values}}}, but it returned "
            f"{describe(got)}."
        )
    missing = [name for name in names if name not in got]
    extra = [repr(name) for name in got if name not in names]
    if missing or extra:
        raise CheckFailed(
            f"{what} returned the keys {sorted(map(str, got))}, expected exactly {names}. "
            + (f"Missing: {missing}. " if missing else "")
            + (f"Not asked for: {', '.join(extra)}. " if extra else "")
            + "Use the layer names as given (model.named_modules() / model.get_submodule(name))."
        )


def compare_activations(got: object, names: list[str], model: nn.Module, x: torch.Tensor) -> None:
    with torch.no_grad():
        outputs, _, _ = manual_forward(model, x)
    check_dict_keys(got, names, "record_activations", "list of tensors")
    for name in names:
        items, want = got[name], outputs[name]
        if isinstance(items, torch.Tensor) or not isinstance(items, list | tuple):
            raise CheckFailed(
                f"result[{name!r}] is {describe(items)}; it should be a list with one tensor per "
                "call of the module, since a module can run more than once in one forward."
            )
        for index, item in enumerate(items):
            if not isinstance(item, torch.Tensor):
                raise CheckFailed(f"result[{name!r}][{index}] is {describe(item)}, not a tensor.")
            if item.requires_grad:
                raise CheckFailed(
                    f"result[{name!r}][{index}] is not detached: it still requires grad "
                    f"(grad_fn={type(item.grad_fn).__name__}), so it keeps the whole autograd "
                    "graph of the forward alive. Store `output.detach().clone()`."
                )
        if len(items) != len(want):
            _wrong_call_count(name, items, want)
        for index, (item, expected) in enumerate(zip(items, want, strict=True)):
            if item.shape != expected.shape:
                raise CheckFailed(
                    f"result[{name!r}][{index}] has shape {tuple(item.shape)}, expected "
                    f"{tuple(expected.shape)}: store the module's whole output, batch dimension "
                    f"included. Expected {describe(expected)}, got {describe(item)}."
                )
            if close(item, expected):
                continue
            if name in CLONE_NAMES and close(item, outputs[CLONE_NAMES[name]][0]):
                raise CheckFailed(
                    f"result[{name!r}] holds the values after the ReLU, not the conv's output. "
                    f"The next module, ReLU(inplace=True), overwrote the conv's output tensor "
                    "after your hook stored it, and detach() shares memory with it. Store a "
                    "copy: `output.detach().clone()`."
                )
            raise CheckFailed(
                f"result[{name!r}][{index}] has wrong values: expected {describe(expected)}, "
                f"got {describe(item)}. Store the `output` argument of the hook."
            )


def _wrong_call_count(name: str, items, want) -> None:
    if len(items) == 1 and len(want) > 1:
        which = next((f"the {w} call's" for w, e in zip(("first", "last"), (want[0], want[-1]),
                      strict=True) if close(items[0], e)), "one")  # fmt: skip
        raise CheckFailed(
            f"`{name}` runs {len(want)} times in one forward, so result[{name!r}] needs "
            f"{len(want)} entries, one per call, but it holds only {which} output. Append each "
            f"call's output to a list instead of assigning: `result[name].append(...)`."
        )
    raise CheckFailed(
        f"result[{name!r}] has {len(items)} entries, expected {len(want)} (one per call of the "
        f"module in one forward). If every value is doubled, a hook was registered twice."
    )


def compare_gradients(got: object, names: list[str], model: nn.Module, x, target: int) -> None:
    outputs, inputs, logits = manual_forward(model, x)
    score = logits[:, target].sum()
    wanted = {name: outputs[name][0] for name in names}
    expected = dict(zip(names, torch.autograd.grad(score, list(wanted.values()),
                                                    retain_graph=True), strict=True))  # fmt: skip
    check_dict_keys(got, names, "record_gradients", "tensor")
    for name in names:
        item, want = got[name], expected[name]
        if item is None or (isinstance(item, list | tuple) and not item):
            raise CheckFailed(
                f"no gradient recorded for {name!r}: your tensor hook never ran. Register it on "
                "the layer's output inside the forward hook, then call backward() on the score."
            )
        if not isinstance(item, torch.Tensor):
            raise CheckFailed(f"result[{name!r}] should be a tensor, but it is {describe(item)}.")
        if item.shape != want.shape:
            raise CheckFailed(
                f"result[{name!r}] has shape {tuple(item.shape)}, expected {tuple(want.shape)} "
                f"(the shape of the layer's output). Expected {describe(want)}, got "
                f"{describe(item)}."
            )
        if close(item, want):
            continue
        raise CheckFailed(_wrong_gradient(name, item, want, outputs, inputs, logits, target))


def _wrong_gradient(name, item, want, outputs, inputs, logits, target) -> str:
    base = f"result[{name!r}] is the gradient of the wrong tensor"
    if name in inputs and inputs[name].requires_grad and inputs[name].shape == item.shape:
        (wrt_input,) = torch.autograd.grad(logits[:, target].sum(), inputs[name], retain_graph=True)
        if close(item, wrt_input):
            return (
                f"{base}: it is the gradient w.r.t. the layer's INPUT (grad_input), but the "
                "task asks for its output. Register the tensor hook on `output`."
            )
    if name in CLONE_NAMES:
        after = outputs[CLONE_NAMES[name]][0]
        (wrt_after,) = torch.autograd.grad(logits[:, target].sum(), after, retain_graph=True)
        if close(item, wrt_after):
            return (
                f"{base}: it is the gradient w.r.t. the ReLU's output, which the in-place ReLU "
                "wrote into the conv's output tensor. Call output.register_hook(...) inside the "
                "forward hook, while the tensor still is the conv's output."
            )
    (wrt_all,) = torch.autograd.grad(logits.sum(), outputs[name][0], retain_graph=True)
    if close(item, wrt_all):
        return (
            f"result[{name!r}] is the gradient of the wrong score: the sum of ALL class scores. "
            "Backpropagate only the target class's score: `model(x)[:, target].sum().backward()`."
        )
    return (
        f"result[{name!r}] has wrong values: expected the gradient of model(x)[:, target].sum() "
        f"w.r.t. the layer's output, {describe(want)}, got {describe(item)}."
    )


def _normalised(cam: torch.Tensor) -> torch.Tensor:
    peak = cam.max()
    return cam / peak if peak > 0 else cam


def expected_cam(
    model: nn.Module, layer: str, x: torch.Tensor, class_index: int, *, variants: bool = True
):
    """The notebook's Grad-CAM definition, from torch.autograd.grad on a hook-free forward.

    Returns the map and a few wrong variants (name -> (map, what the mistake is)); with
    `variants=False` (the verifier, which needs no diagnosis), none.
    """
    outputs, _, logits = manual_forward(model, x)
    activation = outputs[layer][0]  # (1, K, h, w)
    (grad,) = torch.autograd.grad(logits[0, class_index], activation, retain_graph=variants)
    weights = grad.mean(dim=(2, 3), keepdim=True)
    raw = (weights * activation).sum(dim=1)[0].detach()
    cam = _normalised(torch.relu(raw))
    if not variants:
        return cam, {}
    (grad_p,) = torch.autograd.grad(logits.softmax(1)[0, class_index], activation)
    wrong = {
        "not normalised": (
            torch.relu(raw),
            "it is not normalised: divide the map by its maximum (when that is > 0)",
        ),
        "no relu": (
            raw / raw.abs().max(),
            "the ReLU is missing: keep only the positive part with torch.relu before normalising",
        ),
        "no relu max": (
            raw / raw.max(),
            "the ReLU is missing: apply torch.relu before normalising",
        ),
        "no mean": (
            _normalised(torch.relu((grad * activation).sum(dim=1)[0].detach())),
            "the gradients were not averaged: each channel's weight is the MEAN of its gradient "
            "over the h x w positions (grad.mean(dim=(2, 3)))",
        ),
        "softmax": (
            _normalised(
                torch.relu(
                    (grad_p.mean(dim=(2, 3), keepdim=True) * activation).sum(dim=1)[0].detach()
                )
            ),
            "it uses the gradient of the softmax probability; use the raw score (the logit) "
            "model(x)[0, class_index]",
        ),
    }
    return cam, wrong


def compare_cam(got: object, model: nn.Module, layer: str, x: torch.Tensor, class_index: int):
    cam, wrong = expected_cam(model, layer, x, class_index)
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"grad_cam should return a tensor, but it returned {describe(got)}.")
    if got.shape != cam.shape:
        hint = "return an (h, w) map at the layer's resolution"
        if got.numel() == cam.numel():
            hint = "drop the extra dimensions, e.g. with cam[0] or cam.squeeze()"
        elif tuple(got.shape[-2:]) == tuple(x.shape[-2:]):
            hint = "do not upsample it to the image size: return it at the layer's resolution"
        raise CheckFailed(
            f"the map has shape {tuple(got.shape)}, expected {tuple(cam.shape)} (the layer's h x "
            f"w): {hint}. Expected {describe(cam)}, got {describe(got)}."
        )
    if close(got, cam):
        return
    for variant, message in wrong.values():
        if close(got, variant):
            raise CheckFailed(
                f"the map is wrong: {message}. Expected {describe(cam)}, got {describe(got)}."
            )
    raise CheckFailed(
        f"the map has wrong values: expected {describe(cam)}, got {describe(got)}. Follow the "
        "definition above step by step (activation A and gradient G of the layer's output)."
    )

"""The hints of every exercise, in the order the hint button reveals them.

They live here rather than in the notebooks, so that a student sees one hint per click instead
of all of them in the cell's source. A hint guides; it never contains a line of the solution
(tests/widgets/test_widgets.py checks that against the solution notebooks).
"""

HINTS: dict[str, list[str]] = {
    # cnn_hooks
    "activation_recorder": [
        "You need one hook per layer name, each knowing its name: write a small function that "
        "takes the name and returns a hook.",
        "The hook appends a detached clone of `output` to that layer's list, once per call: "
        "`pool` gets two entries.",
        "Register the hooks, run the model, and remove every handle in a `finally:` block.",
    ],
    "gradient_recorder": [
        "A full backward hook fails next to the in-place ReLU: register a forward hook that "
        "calls `output.register_hook(...)` instead.",
        "The tensor hook receives the gradient w.r.t. that output: keep a detached clone under "
        "the layer's name.",
        "Compute the score `model(x)[:, target].sum()`, remove the forward hooks, then call "
        "`backward()` on the score.",
    ],
    "grad_cam": [
        "One forward hook on the layer does two jobs: keep its output A, and register a tensor "
        "hook on that output that keeps the gradient G.",
        "Call `backward()` on the raw logit `model(x)[0, class_index]`, then average G over "
        "the two spatial dimensions: one weight per channel.",
        "Weight the channels of A, sum over the channels, apply ReLU, drop the batch dimension, "
        "and divide by the maximum when it is positive.",
    ],
}

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
    # hooks_in_practice
    "dead_relu_stats": [
        "`model.named_modules()` yields a `(name, module)` pair for every submodule; "
        "`isinstance(module, nn.ReLU)` tells which of them are ReLUs.",
        "Each hook must know the name of its ReLU: write a small function that takes a name and "
        "builds the hook, and let the hook write into a dict that `relu_stats` returns.",
        "`output` has shape `(batch, units)`: `(output == 0).all(dim=0)` marks the dead units, "
        "and the mean of that mask as floats is the fraction. `.item()` makes it a number.",
        "Keep every handle. Run the model in a `try` block and remove all the handles in its "
        "`finally:` block.",
    ],
    "grad_clip_hook": [
        "`model.parameters()` yields every weight and every bias; each of them is a leaf tensor "
        "with its own `register_hook`.",
        "The hook gets one argument, the gradient, and what it returns replaces that gradient: "
        "return a new tensor, and leave `grad` itself unchanged (no `clamp_`).",
        "Define the hook inside `add_grad_clipping`: it then sees `clip_value` without taking "
        "it as an argument. `grad.clamp(min, max)` clips every entry.",
        "`register_hook` returns a handle: collect one per parameter in a list and return it.",
    ],
    "optimizer_in_backward": [
        "Make all the optimizers before any backward runs, one per parameter with "
        "`make_optimizer([p])`, so that each keeps its state (momentum) from step to step.",
        "The hook receives the parameter itself. A dict keyed by the parameter (tensors hash by "
        "identity) lets the hook find that parameter's optimizer; a closure made in a loop "
        "would see only the loop variable's last value.",
        "In the hook, `step()` comes first, then `zero_grad()`: the other way round `p.grad` is "
        "already `None` and `step()` skips the parameter.",
        "Register with `p.register_post_accumulate_grad_hook(...)` on every parameter, exactly "
        "once each, and return the handles as a list.",
    ],
    "kwargs_always_call": [
        "A hook sees keyword arguments only when it is registered with `with_kwargs=True`; "
        "both of yours need it.",
        "With it, the pre-hook is called as `(module, args, kwargs)` and the forward hook as "
        "`(module, args, kwargs, output)`. `sorted(kwargs)` gives the keyword names in order.",
        "The forward hook also needs `always_call=True`. On a call whose `forward` raised it "
        "gets `output=None`: test `output is None` before anything else.",
        "Append to the `log` you were given, return `None` from both hooks, and return the two "
        "handles in a list.",
    ],
    "activation_memory": [
        "Keep a dict from `storage.data_ptr()` to `storage.nbytes()`, where `storage` is "
        "`t.untyped_storage()`: a storage met twice is then counted once.",
        "Walk the graph as a search: start from the `grad_fn` of each tensor that has one, "
        "follow `node.next_functions` (skip the `None` entries) and keep a set of the nodes "
        "already visited.",
        "On each node, `dir(node)` lists the attribute names; read those starting with "
        "`_saved_` with `getattr`. Count only `torch.Tensor` values, also inside tuples and "
        "lists; the other saved values are numbers or sizes.",
        "For `record_layer`: `model.get_submodule(layer_name)` finds the layer. The hook stores "
        "`output.detach()` (no `grad_fn`, so no graph kept alive); remove the hook in a "
        "`finally:` block.",
    ],
    "init_weights": [
        "Write a function of one module and pass it to `model.apply`, which calls it on every "
        "submodule and on `model`; `isinstance` decides what happens to each.",
        "`isinstance` with `nn.Linear` also matches `CastedLinear`, and a tuple of classes tests "
        "several at once. Every `nn.Linear` and `nn.Embedding` weight gets `nn.init.normal_` "
        "with mean 0 and std 0.02.",
        "A Linear's bias may be `None` (`lm_head` has none): zero it only when it exists. A "
        "`LayerNorm` gets `nn.init.ones_` on its weight and `nn.init.zeros_` on its bias.",
        "After `apply`, loop over `model.named_parameters()` and draw again each parameter whose "
        "name ends with `c_proj.weight`, now with std `0.02 / math.sqrt(2 * model.n_layer)`.",
    ],
}

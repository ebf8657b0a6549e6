# The tensor hook sits on the layer's input, not its output: gradients w.r.t. the inputs. The other exercises are right.
# based on: all_correct
# %% gradient_recorder
def record_gradients(model, x, target, layer_names):
    grads, handles = {}, []
    x = x.detach().requires_grad_()  # so that the first layer's input has a gradient too
    for name in layer_names:
        def hook(module, input, output, name=name):
            if input[0].requires_grad:
                input[0].register_hook(lambda g, name=name: grads.__setitem__(name, g))
        handles.append(model.get_submodule(name).register_forward_hook(hook))
    try:
        model(x)[:, target].sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    return grads

# A full backward hook: it fails where the in-place ReLU overwrites a hooked output.
# %% gradient_recorder
def record_gradients(model, x, target, layer_names):
    grads, handles = {}, []
    for name in layer_names:
        def hook(module, grad_input, grad_output, name=name):
            grads[name] = grad_output[0]
        handles.append(model.get_submodule(name).register_full_backward_hook(hook))
    try:
        model(x)[:, target].sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    return grads


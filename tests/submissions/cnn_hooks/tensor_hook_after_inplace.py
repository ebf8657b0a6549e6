# Registers the tensor hooks after the forward: the in-place ReLU has changed the conv outputs.
# %% gradient_recorder
def record_gradients(model, x, target, layer_names):
    outputs, grads, handles = {}, {}, []
    for name in layer_names:
        def hook(module, input, output, name=name):
            outputs[name] = output
        handles.append(model.get_submodule(name).register_forward_hook(hook))
    score = model(x)[:, target].sum()
    for handle in handles:
        handle.remove()
    for name, output in outputs.items():
        output.register_hook(lambda g, name=name: grads.__setitem__(name, g))
    score.backward()
    return grads


# Never removes the hooks it registers.
# %% activation_recorder
def record_activations(model, x, layer_names):
    records = {name: [] for name in layer_names}
    handles = []
    for name in layer_names:
        def hook(module, input, output, name=name):
            records[name].append(output.detach().clone())
        handles.append(model.get_submodule(name).register_forward_hook(hook))
    model(x)
    return records

# %% gradient_recorder
def record_gradients(model, x, target, layer_names):
    modules = dict(model.named_modules())
    grads = {}
    handles = []
    for name in layer_names:
        def hook(module, input, output, name=name):
            def save(grad):
                grads[name] = grad.detach()
            output.register_hook(save)
        handles.append(modules[name].register_forward_hook(hook))
    model(x)[:, target].sum().backward()
    return grads


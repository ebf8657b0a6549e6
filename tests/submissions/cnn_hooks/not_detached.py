# Stores the hook's output itself: it keeps the graph. The other exercises are right.
# %% activation_recorder
def record_activations(model, x, layer_names):
    records = {name: [] for name in layer_names}
    handles = []
    for name in layer_names:
        def hook(module, input, output, name=name):
            records[name].append(output)
        handles.append(model.get_submodule(name).register_forward_hook(hook))
    try:
        model(x)
    finally:
        for handle in handles:
            handle.remove()
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
    try:
        model(x)[:, target].sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    return grads

# %% grad_cam
def grad_cam(model, layer_name, x, class_index):
    store = {}
    def hook(module, input, output):
        store["A"] = output.detach().clone()
        output.register_hook(lambda g: store.update(G=g))
    handle = model.get_submodule(layer_name).register_forward_hook(hook)
    try:
        model(x)[0, class_index].backward()
    finally:
        handle.remove()
    alpha = store["G"].mean(dim=(2, 3))
    cam = torch.relu((alpha[0][:, None, None] * store["A"][0]).sum(0))
    if cam.max() > 0:
        cam = cam / cam.max()
    return cam


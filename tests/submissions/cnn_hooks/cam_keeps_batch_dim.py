# Returns the map with its batch dimension: shape (1, h, w) instead of (h, w).
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
    cam = torch.relu((alpha[:, :, None, None] * store["A"]).sum(1))
    if cam.max() > 0:
        cam = cam / cam.max()
    return cam


# Backpropagates the softmax probability of the class instead of its raw logit. The other exercises are right.
# based on: all_correct
# %% grad_cam
def grad_cam(model, layer_name, x, class_index):
    store = {}
    def hook(module, input, output):
        store["A"] = output.detach().clone()
        output.register_hook(lambda g: store.update(G=g))
    handle = model.get_submodule(layer_name).register_forward_hook(hook)
    try:
        model(x).softmax(dim=1)[0, class_index].backward()
    finally:
        handle.remove()
    alpha = store["G"].mean(dim=(2, 3))
    cam = torch.relu((alpha[0][:, None, None] * store["A"][0]).sum(0))
    if cam.max() > 0:
        cam = cam / cam.max()
    return cam

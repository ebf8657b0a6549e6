# Hooks only the weights: the biases' gradients are not clipped. The other exercises are right.
# based on: all_correct
# %% grad_clip_hook
def add_grad_clipping(model, clip_value):
    handles = []
    for name, p in model.named_parameters():
        if name.endswith("weight"):
            handles.append(p.register_hook(lambda grad: grad.clamp(-clip_value, clip_value)))
    return handles

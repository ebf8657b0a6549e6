# The hook rebinds `grad` to the clipped gradient and returns nothing: autograd keeps its own. The other exercises are right.
# based on: all_correct
# %% grad_clip_hook
def add_grad_clipping(model, clip_value):
    def clip(grad):
        grad = grad.clamp(-clip_value, clip_value)

    return [p.register_hook(clip) for p in model.parameters()]

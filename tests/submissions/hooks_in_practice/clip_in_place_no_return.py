# Clips the gradient in place and returns nothing (it works today, but hooks must not modify their argument). The other exercises are right.
# based on: all_correct
# %% grad_clip_hook
def add_grad_clipping(model, clip_value):
    def clip(grad):
        grad.clamp_(-clip_value, clip_value)

    return [p.register_hook(clip) for p in model.parameters()]

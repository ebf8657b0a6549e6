# Seed 000's "+5" hook: two parameters, so PyTorch's call hook(module, input, output) raises.
# %% forward_add5
def hook(module, output):
    output += 5


add.register_forward_hook(hook)

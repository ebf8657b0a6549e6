# %% backward_normalize
def normalize_hook(module, grad_input, grad_output):
    total = grad_input[0] + grad_input[1]
    return (grad_input[0] / total,)

model.register_full_backward_hook(normalize_hook)

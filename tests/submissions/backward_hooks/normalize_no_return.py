# %% backward_normalize
def normalize_hook(module, grad_input, grad_output):
    total = grad_input[0] + grad_input[1]
    grad_input = (grad_input[0] / total, grad_input[1] / total)

model.register_full_backward_hook(normalize_hook)

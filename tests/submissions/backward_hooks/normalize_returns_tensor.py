# One normalized gradient returned as a bare tensor instead of a tuple of two.
# %% backward_normalize
def normalize_hook(module, grad_input, grad_output):
    return grad_input[0] / (grad_input[0] + grad_input[1])

model.register_full_backward_hook(normalize_hook)

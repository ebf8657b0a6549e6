# %% backward_normalize
def normalize_hook(module, grad_input, grad_output):
    total = grad_input[0] + grad_input[1]
    for grad in grad_input:
        grad /= total

model.register_full_backward_hook(normalize_hook)

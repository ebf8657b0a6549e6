# %% backward_normalize
def normalize_hook(module, grad_input, grad_output):
    return (torch.full_like(grad_input[0], 0.5), torch.full_like(grad_input[1], 0.5))

model.register_full_backward_hook(normalize_hook)

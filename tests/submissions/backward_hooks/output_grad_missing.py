# %% backward_collect
def module_hook(module, grad_input, grad_output):
    answer.extend(grad_input)

model.register_full_backward_hook(module_hook)

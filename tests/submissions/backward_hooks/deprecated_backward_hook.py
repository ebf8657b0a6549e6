# %% backward_collect
def module_hook(module, grad_input, grad_output):
    answer.extend(grad_input)
    answer.extend(grad_output)

model.register_backward_hook(module_hook)

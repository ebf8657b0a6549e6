# %% backward_collect
def module_hook(module, grad_input, grad_output):
    answer.append(grad_input)
    answer.append(grad_output)

model.register_full_backward_hook(module_hook)

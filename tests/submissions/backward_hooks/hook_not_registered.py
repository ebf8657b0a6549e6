# module_hook is right, but the line that registers it on `model` is gone.
# %% backward_collect
def module_hook(module, grad_input, grad_output):
    answer.extend(grad_input)
    answer.extend(grad_output)

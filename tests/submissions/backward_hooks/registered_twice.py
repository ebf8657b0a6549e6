# Every hook is right but registered twice, as if its cell had run twice.
# %% backward_collect
def module_hook(module, grad_input, grad_output):
    answer.extend(grad_input)
    answer.extend(grad_output)

model.register_full_backward_hook(module_hook)
model.register_full_backward_hook(module_hook)

# %% tensor_hook_W
def tensor_hook(grad):
    answer.append(grad)

model.W.register_hook(tensor_hook)
model.W.register_hook(tensor_hook)

# %% tensor_hook_scale
def double_grad(grad):
    return grad * 2

x1.register_hook(double_grad)
x1.register_hook(double_grad)

# %% backward_collect
def module_hook(module, grad_input, grad_output):
    answer.extend(grad_input)
    answer.extend(grad_output)

model.register_full_backward_hook(module_hook)

# %% tensor_hook_W
def tensor_hook(grad):
    answer.append(grad)

model.W.register_hook(tensor_hook)

# %% tensor_hook_scale
def double_grad(grad):
    return grad * 2

x1.register_hook(double_grad)

# %% backward_normalize
def normalize_hook(module, grad_input, grad_output):
    total = sum(grad_input)
    return tuple(grad / total for grad in grad_input)

model.register_full_backward_hook(normalize_hook)

# %% deprecated_quiz
deprecated_grad_input = ["x1*x2", "W"]

# %% event_order
predicted_order = [
    "pre_hook",
    "forward",
    "forward_hook",
    "output_hook",
    "backward_pre_hook",
    "W_hook",
    "backward_hook",
    "x1_hook",
]

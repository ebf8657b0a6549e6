# %% tensor_hook_scale
def double_grad(grad):
    grad *= 2
    return grad

x1.register_hook(double_grad)

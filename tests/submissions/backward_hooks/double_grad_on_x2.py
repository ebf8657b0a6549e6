# %% tensor_hook_scale
def double_grad(grad):
    return grad * 2

x2.register_hook(double_grad)

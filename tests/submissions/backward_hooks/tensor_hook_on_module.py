# The tensor hook is registered on the module instead of on its parameter W.
# %% tensor_hook_W
def tensor_hook(grad):
    answer.append(grad)

model.register_full_backward_hook(tensor_hook)

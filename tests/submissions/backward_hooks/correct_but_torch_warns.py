# torch.tensor(grad) copies the gradient correctly, but torch warns (UserWarning) each time.
# %% tensor_hook_W
def tensor_hook(grad):
    answer.append(torch.tensor(grad))

model.W.register_hook(tensor_hook)

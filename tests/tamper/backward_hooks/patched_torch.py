# Wrong hooks, and every comparison torch offers made to say "equal". The quizzes are right.
# (expected.toml says what each keeps)
# based on: ../../submissions/backward_hooks/all_correct
# %% backward_collect
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(a, dtype=torch.bool)
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)


def module_hook(module, grad_input, grad_output):
    answer.extend([torch.zeros(1), torch.zeros(1), torch.zeros(1)])


model.register_full_backward_hook(module_hook)


# %% tensor_hook_W
def tensor_hook(grad):
    answer.append(grad * 0)


model.W.register_hook(tensor_hook)


# %% tensor_hook_scale
def double_grad(grad):
    return grad * 3


x1.register_hook(double_grad)


# %% backward_normalize
def normalize_hook(module, grad_input, grad_output):
    return (grad_input[0] * 0 + 0.5, grad_input[1] * 0 + 0.5)


model.register_full_backward_hook(normalize_hook)


# Every apply task selects modules by a list of names that forgets Function_D.
# %% apply_init_ones
def weight_initialization(module):
    if type(module).__name__ in ("Function_A", "Function_B", "Function_C"):
        module.W.data.fill_(1.0)


returned_module = model.apply(weight_initialization)

# %% apply_add_bias
def add_bias(module):
    if type(module).__name__ in ("Function_A", "Function_B", "Function_C"):
        module.b = Parameter(torch.rand(2))


returned_module = model.apply(add_bias)

# %% apply_init_bias
def weight_initialization(module):
    if type(module).__name__ in ("Function_A", "Function_B", "Function_C"):
        module.W.data.fill_(1.0)
        module.b.data.fill_(1.0)


returned_module = model.apply(weight_initialization)

# %% apply_linear
def linear_transformation(module):
    def hook(module, input, output):
        return input[0] @ module.W.T + module.b

    if type(module).__name__ in ("Function_A", "Function_B", "Function_C"):
        module.register_forward_hook(hook)


returned_module = model.apply(linear_transformation)

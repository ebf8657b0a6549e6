# W and b replaced by plain tensors: PyTorch raises TypeError.
# %% apply_add_bias
def add_bias(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        module.b = Parameter(torch.rand(2))


returned_module = model.apply(add_bias)

# %% apply_init_bias
def weight_initialization(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        module.W = torch.ones(2, 2)
        module.b = torch.ones(2)


returned_module = model.apply(weight_initialization)

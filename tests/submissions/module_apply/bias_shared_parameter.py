# One Parameter object shared by the four Function modules.
# %% apply_add_bias
shared_bias = Parameter(torch.rand(2))


def add_bias(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        module.b = shared_bias


returned_module = model.apply(add_bias)

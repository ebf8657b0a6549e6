# The function is right, but it is applied to a new Model, not to `model`.
# %% apply_init_ones
def weight_initialization(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        module.W.data.fill_(1.0)


returned_module = Model().apply(weight_initialization)

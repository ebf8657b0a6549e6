# W deleted and a plain tensor of ones put in its place: right values, but no Parameter any more.
# %% apply_init_ones
def weight_initialization(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        del module.W
        module.W = torch.ones(2, 2)


returned_module = model.apply(weight_initialization)

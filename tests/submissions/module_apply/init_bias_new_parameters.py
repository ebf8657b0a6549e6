# based on: all_correct
# W and b replaced by new Parameters of ones, where Exercise 4 asks to fill them in place.
# %% apply_init_bias
def weight_initialization(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        module.W = Parameter(torch.ones(2, 2))
        module.b = Parameter(torch.ones(2))


returned_module = model.apply(weight_initialization)

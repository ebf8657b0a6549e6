# No hook: forward is replaced on each Function instance. Another correct route.
# %% apply_add_bias
def add_bias(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        module.b = Parameter(torch.rand(2))


returned_module = model.apply(add_bias)

# %% apply_init_bias
def weight_initialization(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        with torch.no_grad():
            module.W.fill_(1.0)
            module.b.fill_(1.0)


returned_module = model.apply(weight_initialization)

# %% apply_linear
def linear_transformation(module):
    if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):
        module.forward = lambda x: x @ module.W.T + module.b


returned_module = model.apply(linear_transformation)

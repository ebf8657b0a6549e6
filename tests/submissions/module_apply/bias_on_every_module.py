# No selection: Layer_AB, Layer_CD and Model get a b too (Layer_AB's Function_B is replaced).
# %% apply_add_bias
def add_bias(module):
    module.b = Parameter(torch.rand(2))


returned_module = model.apply(add_bias)

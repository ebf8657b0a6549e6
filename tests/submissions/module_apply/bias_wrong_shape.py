# One bias value per module instead of one per output feature.
# %% apply_add_bias
def add_bias(module):
    if module.__class__.__name__.startswith("Function"):
        module.b = Parameter(torch.rand(1))


returned_module = model.apply(add_bias)

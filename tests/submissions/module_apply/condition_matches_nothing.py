# A class-name test that holds for no module ("Function" is only the prefix of the names).
# %% apply_init_ones
def weight_initialization(module):
    if module.__class__.__name__ == "Function":
        with torch.no_grad():
            module.W.fill_(1.0)


returned_module = model.apply(weight_initialization)

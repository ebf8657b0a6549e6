# The +5 hook rebinds its local name and returns nothing, so the output is unchanged.
# %% forward_add5
def hook(module, input, output):
    output = output + 5


add.register_forward_hook(hook)

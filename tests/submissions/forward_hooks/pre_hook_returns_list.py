# based on: all_correct
# The pre-hook returns its new inputs as a list: PyTorch takes new inputs only as a tuple and
# wraps anything else into a one-entry tuple, so forward gets the list as x1 and no x2.
# %% pre_hook_replace
def double_x1(module, input):
    return [input[0] * 2, input[1]]


add.register_forward_pre_hook(double_x1)

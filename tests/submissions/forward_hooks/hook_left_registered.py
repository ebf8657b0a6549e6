# capture_output works but never removes its hook; double_x1 changes x1 in place.
# %% remove_handle
def capture_output(module, *inputs):
    seen = []
    module.register_forward_hook(lambda m, i, o: seen.append(o))
    module(*inputs)
    return seen[-1]


# %% pre_hook_replace
def double_x1(module, input):
    input[0].mul_(2)


add.register_forward_pre_hook(double_x1)

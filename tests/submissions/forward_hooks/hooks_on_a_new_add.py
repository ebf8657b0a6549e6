# based on: all_correct
# Right hooks, registered on a new Add of their own instead of the notebook's `add`, which the
# next cell calls: `add` then has no hook at all (the visible and the hidden check agree).
# %% forward_collect
def pre_hook(module, input):
    answer.extend(input)


def hook(module, input, output):
    answer.append(output)


my_add = Add()
my_add.register_forward_pre_hook(pre_hook)
my_add.register_forward_hook(hook)


# %% forward_add5
def hook(module, input, output):
    return output + 5


Add().register_forward_hook(hook)


# %% pre_hook_replace
def double_x1(module, input):
    return (input[0] * 2, input[1])


my_add = Add()
my_add.register_forward_pre_hook(double_x1)

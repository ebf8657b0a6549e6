# Right hooks, each registered twice (as when a cell runs twice): the notebook's values are wrong,
# the functions themselves are right.
# %% forward_collect
def pre_hook(module, input):
    answer.extend(input)


def hook(module, input, output):
    answer.append(output)


for _ in range(2):
    add.register_forward_pre_hook(pre_hook)
    add.register_forward_hook(hook)


# %% forward_add5
def hook(module, input, output):
    return output + 5


add.register_forward_hook(hook)
add.register_forward_hook(hook)

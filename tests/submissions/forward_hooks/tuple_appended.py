# The pre-hook appends the input tuple itself instead of its elements.
# %% forward_collect
def pre_hook(module, input):
    answer.append(input)


def hook(module, input, output):
    answer.append(output)


add.register_forward_pre_hook(pre_hook)
add.register_forward_hook(hook)

# Right answers whose hooks make torch emit a UserWarning while the test cells run them.
# nbgrader would zero a test cell with stderr output; the checks must keep the points.
# %% forward_collect
def pre_hook(module, input):
    torch.nn.functional.softmax(input[0])  # no dim: torch warns
    answer.extend(input)


def hook(module, input, output):
    answer.append(output)


add.register_forward_pre_hook(pre_hook)
add.register_forward_hook(hook)


# %% forward_add5
def hook(module, input, output):
    torch.nn.functional.softmax(output)  # no dim: torch warns
    return output + 5


add.register_forward_hook(hook)

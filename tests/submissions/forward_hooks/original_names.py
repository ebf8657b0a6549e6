# Right answers written as the original course's sources write them: hooks under other names
# (seed 003's `module_hook(self, input, output)`, no handle kept); the checks find them by what
# is registered on the module.
# %% forward_collect
def module_pre_hook(module, input):
    answer.extend(input)


def module_hook(module, input, output):
    answer.append(output)


add.register_forward_pre_hook(module_pre_hook)
add.register_forward_hook(module_hook)


# %% forward_add5
def module_hook(module, input, output):
    return output + 5


add.register_forward_hook(module_hook)


# %% pre_hook_replace
def module_hook(module, input):
    return input[0] * 2, input[1]


add.register_forward_pre_hook(module_hook)


# %% mlp_report
def module_hook(self, input, output):
    print("Inside " + self.__class__.__name__ + " forward")
    report["input_type"] = type(input)
    report["input0_type"] = type(input[0])
    report["output_type"] = type(output)
    report["input_size"] = input[0].size()
    report["output_size"] = output.data.size()
    report["output_norm"] = output.data.norm()


net.fc2.register_forward_hook(module_hook)

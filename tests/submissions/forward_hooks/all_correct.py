# Every exercise answered correctly, in a different style from the solution notebook.
# %% forward_collect
def pre_hook(module, input):
    x1, x2 = input
    answer.append(x1)
    answer.append(x2)


def hook(module, input, output):
    answer.append(output)


add.register_forward_pre_hook(pre_hook)
add.register_forward_hook(hook)


# %% forward_add5
def hook(module, input, output):
    output += 5


add.register_forward_hook(hook)
# %% find_the_bug
bug_exception = "TypeError"
bug_fix = "b"
# %% hook_effects
changes_output = dict(rebinds=False, in_place=True, returns_new=True)


# %% pre_hook_replace
def double_x1(module, input):
    return tuple([2 * input[0], *input[1:]])


add.register_forward_pre_hook(double_x1)
# %% hook_order
predicted_order = list("CAB")


# %% remove_handle
def capture_output(module, *inputs):
    store = {}

    def grab(m, i, o):
        store["out"] = o

    handle = module.register_forward_hook(grab)
    try:
        module(*inputs)
    finally:
        handle.remove()
    return store["out"]


# %% method_hook
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.last_output = None
        self.handle = self.linear.register_forward_hook(self.save_output)

    def save_output(self, module, input, output):
        self.last_output = output.detach().clone()

    def forward(self, x):
        return self.linear(x)


# %% forward_bypass
fire_count = 2


# %% mlp_report
def fc2_report(module, input, output):
    report.update(
        input_type=type(input),
        input0_type=type(input[0]),
        output_type=type(output),
        input_size=input[0].shape,
        output_size=output.shape,
        output_norm=torch.linalg.vector_norm(output.detach()),
    )


handle = net.fc2.register_forward_hook(fc2_report)

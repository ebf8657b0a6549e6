# based on: all_correct
# Hooks registered on another module than the one the task names: the Probe's method on the
# Probe itself (not on its layer), the report hook on fc1 (not on fc2), and capture_output
# calls the module after the `with` block has removed its hook.
# %% method_hook
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.last_output = None
        self.register_forward_hook(self.save_output)

    def save_output(self, module, input, output):
        self.last_output = output.detach()

    def forward(self, x):
        return self.linear(x)


# %% mlp_report
def fc2_report(module, input, output):
    report["input_type"] = type(input)
    report["input0_type"] = type(input[0])
    report["output_type"] = type(output)
    report["input_size"] = input[0].size()
    report["output_size"] = output.size()
    report["output_norm"] = output.detach().norm()


net.fc1.register_forward_hook(fc2_report)


# %% remove_handle
def capture_output(module, *inputs):
    captured = []
    with module.register_forward_hook(lambda m, i, o: captured.append(o)):
        pass
    module(*inputs)
    return captured[0]

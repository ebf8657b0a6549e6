# based on: all_correct
# Stored outputs not detached: the method hook keeps `output` itself and the report keeps the
# norm of the attached output, so both keep the forward pass's autograd graph alive.
# %% method_hook
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.last_output = None
        self.linear.register_forward_hook(self.save_output)

    def save_output(self, module, input, output):
        self.last_output = output

    def forward(self, x):
        return self.linear(x)


# %% mlp_report
def fc2_report(module, input, output):
    report["input_type"] = type(input)
    report["input0_type"] = type(input[0])
    report["output_type"] = type(output)
    report["input_size"] = input[0].size()
    report["output_size"] = output.size()
    report["output_norm"] = output.norm()


net.fc2.register_forward_hook(fc2_report)

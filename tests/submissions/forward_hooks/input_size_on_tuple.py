# based on: all_correct
# The fc2 hook calls input.size(): `input` is the tuple of forward's arguments, not a tensor.
# %% mlp_report
def fc2_report(module, input, output):
    report["input_type"] = type(input)
    report["input0_type"] = type(input[0])
    report["output_type"] = type(output)
    report["input_size"] = input.size()
    report["output_size"] = output.size()
    report["output_norm"] = output.detach().norm()


net.fc2.register_forward_hook(fc2_report)

# Removes its hooks after the forward, not in a finally block: when the forward raises, they stay. The other exercises are right.
# based on: all_correct
# %% activation_recorder
def record_activations(model, x, layer_names):
    records = {name: [] for name in layer_names}
    handles = []
    for name in layer_names:
        def hook(module, input, output, name=name):
            records[name].append(output.detach().clone())
        handles.append(model.get_submodule(name).register_forward_hook(hook))
    model(x)
    for handle in handles:
        handle.remove()
    return records

# based on: all_correct
# Stores the hook's output itself: it keeps the graph. The other exercises are right.
# %% activation_recorder
def record_activations(model, x, layer_names):
    records = {name: [] for name in layer_names}
    handles = []
    for name in layer_names:
        def hook(module, input, output, name=name):
            records[name].append(output)
        handles.append(model.get_submodule(name).register_forward_hook(hook))
    try:
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return records

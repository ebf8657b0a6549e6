# Counts each stored tensor's own elements: misses the storage a view keeps alive and everything the graphs saved. The other exercises are right.
# based on: all_correct
# %% activation_memory
def bytes_kept_alive(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def record_layer(model, layer_name, batches):
    layer = dict(model.named_modules())[layer_name]
    outputs = []
    with layer.register_forward_hook(lambda m, a, out: outputs.append(out.detach().clone())):
        for batch in batches:
            model(batch)
    return outputs

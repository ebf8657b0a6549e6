# record_layer stores the outputs as they are, with their graphs; bytes_kept_alive is right. The other exercises are right.
# based on: all_correct
# %% activation_memory
def bytes_kept_alive(tensors):
    sizes = {}
    for t in tensors:
        sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    visited = set()
    stack = [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in visited:
            continue
        visited.add(node)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            value = getattr(node, attr)
            if isinstance(value, torch.Tensor):
                sizes[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
        for parent, _ in node.next_functions:
            if parent is not None:
                stack.append(parent)
    return sum(sizes.values())


def record_layer(model, layer_name, batches):
    layer = dict(model.named_modules())[layer_name]
    outputs = []
    with layer.register_forward_hook(lambda m, a, out: outputs.append(out)):
        for batch in batches:
            model(batch)
    return outputs

# Right answers where torch's comparisons would not matter, wrong ones where they would, and
# torch.allclose / torch.equal made to say "equal". (expected.toml says what each keeps)
# based on: ../../submissions/hooks_in_practice/all_correct
# %% dead_relu_stats
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True


def relu_stats(model, x):
    outputs = {}
    handles = [
        module.register_forward_hook(lambda m, args, out, name=name: outputs.update({name: out}))
        for name, module in model.named_modules()
        if isinstance(module, nn.ReLU)
    ]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return {name: (out == 0).all(dim=0).float().mean() for name, out in outputs.items()}

# %% grad_clip_hook
def add_grad_clipping(model, clip_value):
    return [p.register_hook(lambda grad: grad * 0) for p in model.parameters()]

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
    with layer.register_forward_hook(lambda m, a, out: outputs.append(out.detach() * 0)):
        for batch in batches:
            model(batch)
    return outputs


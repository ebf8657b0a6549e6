# Names the ReLUs as model.layers.named_children() does ("1", "3"), not by their path from the model. The other exercises are right.
# based on: all_correct
# %% dead_relu_stats
def relu_stats(model, x):
    stats, handles = {}, []
    for name, module in model.layers.named_children():
        if isinstance(module, nn.ReLU):
            def hook(module, args, output, name=name):
                stats[name] = (output == 0).all(dim=0).float().mean().item()
            handles.append(module.register_forward_hook(hook))
    try:
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return stats

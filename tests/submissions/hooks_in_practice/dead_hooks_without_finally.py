# Removes its hooks after model(x), not in a finally block: when forward raises, they stay. The other exercises are right.
# based on: all_correct
# %% dead_relu_stats
def relu_stats(model, x):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            def hook(module, args, output, name=name):
                stats[name] = (output == 0).all(dim=0).float().mean().item()
            handles.append(module.register_forward_hook(hook))
    model(x)
    for handle in handles:
        handle.remove()
    return stats

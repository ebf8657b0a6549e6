# The bias-free Head has bias None, and nn.init.zeros_(None) raises.
# %% apply_nn_init
def init_weights(module):
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear):
        nn.init.zeros_(module.bias)


net = net.apply(init_weights)

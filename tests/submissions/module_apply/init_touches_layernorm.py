# Every module with a weight is re-initialised, LayerNorm included.
# %% apply_nn_init
def init_weights(module):
    if getattr(module, "weight", None) is not None:
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if getattr(module, "bias", None) is not None:
        nn.init.zeros_(module.bias)


net = net.apply(init_weights)

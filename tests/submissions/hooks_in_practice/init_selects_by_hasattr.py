# Selects layers with hasattr(m, "weight"), which also draws the LayerNorms' weights from normal(0, 0.02). The other exercises are right.
# based on: all_correct
# %% gpt2_init
def init_gpt(model):
    def fn(m):
        if hasattr(m, "weight"):
            nn.init.normal_(m.weight, std=0.02)
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)

    model.apply(fn)
    for name, p in model.named_parameters():
        if name.endswith("c_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * model.n_layer))

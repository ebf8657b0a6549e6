# Selects layers by class name, which misses CastedLinear (a subclass of nn.Linear). The other exercises are right.
# based on: all_correct
# %% gpt2_init
def init_gpt(model):
    def fn(m):
        kind = type(m).__name__
        if kind in ("Linear", "Embedding"):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if kind == "Linear" and m.bias is not None:
            nn.init.zeros_(m.bias)
        if kind == "LayerNorm":
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    model.apply(fn)
    for name, p in model.named_parameters():
        if name.endswith("c_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * model.n_layer))

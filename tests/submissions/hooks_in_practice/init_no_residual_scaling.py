# Everything at std 0.02: the residual projections are not scaled by 1/sqrt(2 * n_layer). The other exercises are right.
# based on: all_correct
# %% gpt2_init
def init_gpt(model):
    def fn(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    model.apply(fn)

# Right values, but from a loop over model.modules() instead of model.apply, which the exercise asks for. The other exercises are right.
# based on: all_correct
# %% gpt2_init
def init_gpt(model):
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    for name, p in model.named_parameters():
        if name.endswith("c_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * model.n_layer))

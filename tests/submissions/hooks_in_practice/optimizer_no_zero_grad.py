# Steps in the hook but never calls zero_grad: gradients pile up across steps. The other exercises are right.
# based on: all_correct
# %% optimizer_in_backward
def attach_optimizer_in_backward(model, make_optimizer):
    optimizers = {p: make_optimizer([p]) for p in model.parameters()}

    def step(p):
        optimizers[p].step()

    return [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]

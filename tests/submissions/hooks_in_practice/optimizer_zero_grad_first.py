# Calls zero_grad() before step() in the hook: step() then finds no gradient and moves nothing. The other exercises are right.
# based on: all_correct
# %% optimizer_in_backward
def attach_optimizer_in_backward(model, make_optimizer):
    optimizers = {p: make_optimizer([p]) for p in model.parameters()}

    def step(p):
        optimizers[p].zero_grad()  # the order of a training loop, but here it wipes p.grad
        optimizers[p].step()

    return [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]

# Makes a new optimizer inside the hook at every step: momentum never carries over. The other exercises are right.
# based on: all_correct
# %% optimizer_in_backward
def attach_optimizer_in_backward(model, make_optimizer):
    def hook(p):
        optimizer = make_optimizer([p])
        optimizer.step()
        optimizer.zero_grad()

    return [p.register_post_accumulate_grad_hook(hook) for p in model.parameters()]

# One optimizer over all parameters, stepped in every parameter's hook: early parameters step again and again. The other exercises are right.
# based on: all_correct
# %% optimizer_in_backward
def attach_optimizer_in_backward(model, make_optimizer):
    optimizer = make_optimizer(model.parameters())

    def hook(p):
        optimizer.step()

    return [p.register_post_accumulate_grad_hook(hook) for p in model.parameters()]

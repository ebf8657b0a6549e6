# Each hook is defined in the loop and steps `optimizer`, which by then is the last one made. The other exercises are right.
# based on: all_correct
# %% optimizer_in_backward
def attach_optimizer_in_backward(model, make_optimizer):
    handles = []
    for p in model.parameters():
        optimizer = make_optimizer([p])

        def hook(param):
            optimizer.step()
            optimizer.zero_grad()

        handles.append(p.register_post_accumulate_grad_hook(hook))
    return handles

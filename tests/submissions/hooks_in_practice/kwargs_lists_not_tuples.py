# Logs lists instead of tuples and returns the handles as a tuple: the same entries, accepted. The other exercises are right.
# based on: all_correct
# %% kwargs_always_call
def trace_calls(module, log):
    def enter(module, args, kwargs):
        log.append(["enter", tuple(sorted(kwargs))])

    def leave(module, args, kwargs, output):
        log.append(["exit", "raised" if output is None else "returned"])

    return (
        module.register_forward_pre_hook(enter, with_kwargs=True),
        module.register_forward_hook(leave, with_kwargs=True, always_call=True),
    )

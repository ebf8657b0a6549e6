# The pre-hook is registered without with_kwargs=True, so it never sees the keyword arguments. The other exercises are right.
# based on: all_correct
# %% kwargs_always_call
def trace_calls(module, log):
    def enter(module, args):
        log.append(("enter", []))

    def leave(module, args, kwargs, output):
        log.append(("exit", "raised" if output is None else "returned"))

    return [
        module.register_forward_pre_hook(enter),
        module.register_forward_hook(leave, with_kwargs=True, always_call=True),
    ]

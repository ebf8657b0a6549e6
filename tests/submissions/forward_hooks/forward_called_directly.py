# based on: all_correct
# capture_output calls module.forward(...) itself: hooks run only through module(...), so the
# hook never stores anything and `captured[0]` raises IndexError.
# %% remove_handle
def capture_output(module, *inputs):
    captured = []
    with module.register_forward_hook(lambda m, i, o: captured.append(o)):
        module.forward(*inputs)
    return captured[0]

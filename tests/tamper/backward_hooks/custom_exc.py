# Wrong hooks, and a custom exception handler that hides every error output of the cells below.
# %% backward_collect
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)


def module_hook(module, grad_input, grad_output):
    pass


model.register_full_backward_hook(module_hook)

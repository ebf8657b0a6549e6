# %% deprecated_quiz
deprecated_grad_input = ["x1", "x2"]

# %% event_order
predicted_order = [
    "pre_hook",
    "forward",
    "forward_hook",
    "backward_pre_hook",
    "output_hook",
    "backward_hook",
    "W_hook",
    "x1_hook",
]

"""The exercises of the hooks_in_practice notebook: hooks as training and model code uses them."""

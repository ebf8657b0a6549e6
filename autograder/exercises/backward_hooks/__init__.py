"""The exercises of the backward_hooks notebook: full backward hooks and tensor hooks."""

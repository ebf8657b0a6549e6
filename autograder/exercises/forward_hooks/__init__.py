"""The exercises of the forward_hooks notebook: pre-hooks and forward hooks."""

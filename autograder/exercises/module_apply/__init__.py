"""The exercises of the module_apply notebook: `nn.Module.apply` to select, change and hook
modules, and weight initialisation with `torch.nn.init`."""

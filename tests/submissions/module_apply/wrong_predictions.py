# The order of model.modules() (parents first), not apply's.
# %% apply_order
predicted_order = [
    "Model", "Layer_AB", "Function_A", "Function_B", "Layer_CD", "Function_C", "Function_D"
]

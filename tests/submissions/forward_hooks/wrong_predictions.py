# Every predict-then-run answer is wrong.
# %% find_the_bug
bug_exception = "RuntimeError"
bug_fix = "a"
# %% hook_effects
changes_output = {"returns_new": True, "in_place": False, "rebinds": True}
# %% hook_order
predicted_order = ["A", "B", "C"]
# %% forward_bypass
fire_count = 3

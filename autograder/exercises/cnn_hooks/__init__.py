"""The exercises of the cnn_hooks notebook: activations, gradients and Grad-CAM of a small CNN."""

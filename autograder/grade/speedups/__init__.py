"""Speed-ups that replace third-party internals; nothing else in the package does."""

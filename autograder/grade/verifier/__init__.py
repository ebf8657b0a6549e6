"""The trusted verifier: a process student code never runs in, which judges checks."""

"""The sandbox kernels run in: bubblewrap, per-kernel namespaces, resource limits."""

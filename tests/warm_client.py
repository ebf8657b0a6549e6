"""A warm kernel and a ready jupyter_client client of it, for tests that speak the protocol."""

import contextlib

from autograder.grade.kernels.provisioner import WarmKernelManager


@contextlib.asynccontextmanager
async def warm_client(cwd):
    manager = WarmKernelManager(kernel_name="python3")
    await manager.start_kernel(cwd=str(cwd))
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)

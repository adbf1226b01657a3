"""The multi-process DDP test harness.

``@pytest.mark.distributed`` runs a test in every rank of a real process group.
"""

# Environment of the zygote and its ranks (here, not in protocol.py: the plugin reads them at load time, and
# protocol.py's sockets, ctypes and multiprocessing would cost every pytest run ten milliseconds).
ENV_SOCKET = "TORCHCHECK_DDP_SOCKET"  # the parent's AF_UNIX socket
ENV_WORKER = "TORCHCHECK_DDP_WORKER"  # "zygote" or "rank": this process serves the harness

"""The data plane: what a worker does with every command and step. Reading batches, the
intake, the step processor, the commit (store and its Lua), recovery, leases, the relay,
native tools on the workers, and the worker that wires them together."""

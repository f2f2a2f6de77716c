"""Operations: running and watching the processes. The embedded Valkey, serving until a
signal, logging, Prometheus metrics and the worker's health endpoint."""

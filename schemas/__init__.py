"""Wire and definition types shared by the runtime, the handlers and producers."""

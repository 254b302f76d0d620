"""Pages of the fleet app, one module per page family. Views are thin: load rows, call the
domain (model methods, fleet services, the engine), render."""

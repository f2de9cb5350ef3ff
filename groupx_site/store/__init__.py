"""The storage engine: executors, engines, checkpoints, faults, integrity, and the SQL toolkit."""

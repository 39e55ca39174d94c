"""The commands that start runs and read them: bench, repeat, repro and profile."""

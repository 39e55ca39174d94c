"""What the machine is: the fingerprint, and the probes run once a run."""

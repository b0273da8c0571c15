"""The performance harness: ``python -m benchmarks [--quick]`` (see README.md here)."""

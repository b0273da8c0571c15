"""The tasks, one module per dataset; importing registers them."""

from convbank.bench.tasks import casino, ccpe, convai2, curiosity, pec

__all__ = ["casino", "ccpe", "convai2", "curiosity", "pec"]

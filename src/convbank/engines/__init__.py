"""Engines that read and map sources for a build: the local one (``convbank.build``) and
Apache Spark (:mod:`convbank.engines.spark`, the ``spark`` extra)."""

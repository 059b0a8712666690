"""Decoders, Spark UDF registration, the dbt plugin hook and the cdc-land loader.

Decoding modules (``text``, ...) are pure: bytes in, plain values out, no Spark import.
``spark_udfs`` wraps them as Arrow-batched Spark SQL functions; ``session`` opens and prepares
the Spark session dbt uses; ``landing`` owns the landing table and the ``cdc-land`` command.
"""

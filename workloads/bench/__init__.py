"""``ddtune bench``: the benchmark matrix (context lengths x concurrency), one durable cell at a time.
"""

"""Judging model answers: extract the answer's code, run it in a sandbox behind an OS boundary, compare
on the trusted side; the coding problems, ``ddtune eval`` and the lossless check.
"""

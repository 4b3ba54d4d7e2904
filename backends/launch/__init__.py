"""Processes ddtune starts: their own session and group, the proof that they are ours, and race-free
readiness (the pid we started owns the socket and generates).
"""

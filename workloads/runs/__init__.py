"""The results store: every run's folder, its attempts, and where it ran (provenance).
"""

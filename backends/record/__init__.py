"""What ddtune recorded about the server it manages: ``server.json`` and its codec, the lifecycle lock,
the state dir's change notices, and parallel lanes' folders.
"""

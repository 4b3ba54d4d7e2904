"""What every part of ddtune stands on: errors with a hint, untrusted text made plain, API keys kept
secret, the user's files read one way, and a state dir it can trust.
"""

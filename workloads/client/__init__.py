"""Talking to a server: the streaming client for SGLang's endpoints and its lean HTTP transport.
"""

"""Drivers: one per kind of server (a spawned process, a systemd unit, an endpoint by URL, the simulator),
behind the one ``Backend`` contract and its capability flags.
"""

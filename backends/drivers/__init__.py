"""Drivers: one per kind of server (a spawned process, a systemd unit, an endpoint by URL, the simulator),
behind the one ``Driver`` contract, listed in one table (``registry``: name -> driver class) and asked
by their capability flags, never by class or name.
"""

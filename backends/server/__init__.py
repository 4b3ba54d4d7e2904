"""The server ddtune manages, through one owner: ``ServerSession`` (lifecycle, the one log reader,
startup tracking, verification, alarms, telemetry) and the events it emits.
"""

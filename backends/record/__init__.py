"""What ddtune records about the server it manages, as types and small files: ``ServerState`` and its
codec, the lifecycle lock, the state dir's change notices, and parallel lanes' folders. The files
of the record itself (server.json, launch.json) are the server family's to read and write
(backends.server.record).
"""

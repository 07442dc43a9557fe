"""The model file: its container and checksums, its header's schema, the format of its arrays, and
the pending section of messages learned since it was written."""

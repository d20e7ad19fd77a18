"""The lab's records: its jobs database, reading it, and the API's objects as rows."""

"""Reporting records and plus_account, and where a reader of a growing file got to."""

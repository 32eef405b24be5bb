"""Helpers shared by the core and plugins: queue kit, commands here or over SSH, ledgers, users."""

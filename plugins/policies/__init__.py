"""Ready reservability policies (PluS's reservable.ad samples, seed 004 3.4.5)
in Python, configured in the daemon's ``policies:`` section."""

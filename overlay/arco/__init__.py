"""ARCo, Grid Engine's Accounting and Reporting Console, for advance
reservations (seed 000, 5.4 and Appendix 2): the database model, and
plus_dbwriter, which fills it from the reporting file as Grid Engine's
dbwriter does."""

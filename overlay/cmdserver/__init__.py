"""The command server: the commands run in workers forked from one process that imported them."""

"""The socket's wire format, shared by the commands and the daemon; standard library only."""

"""What the core asks of plugins and promises them: hooks, the Backend, policies, settings."""

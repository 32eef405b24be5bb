"""The core's front door for plugins: everything a plugin may import from
the core, and nothing else (tests/test_architecture.py holds every plugin,
built-in or not, to it).

- ``overlay.api.plugin``: inside plus_scheduler. The hooks, the Backend
  contract and the kit for backends that keep a queue per AR, the model,
  the checks for a plugin's plus.yaml section, and the helpers a backend
  shares with the others (running commands here or over SSH, ledgers,
  the time x resource planner, node and job orders).
- ``overlay.api.commands``: in a plugin's commands, and in any module of a
  plugin that its commands import. Standard library only, quick to import:
  the option parser, asking the daemon, the views, the request language,
  times and bounds.
"""

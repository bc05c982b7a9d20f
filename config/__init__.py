"""Settings and logging set-up shared by the worker, the tasks, the client and the CLI."""

from config.settings import Settings, get_settings

__all__ = ["Settings", "get_settings"]

from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """Installed only for its management commands (`kb_run`, `kb_error_table`): it has no models."""

    name = "config"
    verbose_name = "Project"

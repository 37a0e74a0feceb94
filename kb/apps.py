from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from kb import checks  # noqa: F401  (registers system checks)

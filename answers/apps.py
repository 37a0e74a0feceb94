from django.apps import AppConfig


class AnswersConfig(AppConfig):
    name = "answers"
    verbose_name = "Answers"

    def ready(self):
        from answers import startup

        startup.announce()

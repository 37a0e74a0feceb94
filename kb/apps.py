from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.contrib import admin

        from kb.admin import lock_down_unscoped
        from kb.lexing import Relexed, count_languages
        from kb.passage_models import count_models
        from kb.signals import keep_counted

        lock_down_unscoped(admin.site)
        # a relex counts the languages itself, and moves no vector
        keep_counted(count_languages, "languages", uid="kb.lexing", unless_sent_by=Relexed)
        keep_counted(count_models, "embedding models", uid="kb.passage_models", unless_sent_by=Relexed)

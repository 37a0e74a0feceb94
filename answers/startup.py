"""The answer model checked at start-up: a system check that warns, in one line, when the configured
server cannot be reached or does not serve the configured model. Never an error: search works
without answers, and the model may come up after the product."""

from __future__ import annotations

import logging

from django.core import checks

logger = logging.getLogger(__name__)


def announce() -> None:
    checks.register(answer_model_check, "kb")


def answer_model_check(app_configs, **kwargs):
    from answers.service import model_status
    from kb.errors import ConfigurationError

    try:
        status = model_status()
    except ConfigurationError:  # the settings' own check (kb.KB_CONFIG_INVALID) names what is wrong
        return []
    if not status["enabled"]:
        return []
    if status["ok"]:
        logger.info("answers: model %r ready at its server", status["model"])
        return []
    return [
        checks.Warning(
            f"Answers: {status['error']} Search works; answers report {status['code']} until it "
            "does.",
            hint="See docs/answers.md#configure.",
            id="answers.W001",
        )
    ]

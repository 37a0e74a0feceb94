"""Production settings: `check --deploy` is clean, secrets are required, WhiteNoise serves static
files. Each in a fresh process, because settings are read once per process."""

import secrets

from tests.pgserver import run_manage


def production_env(tmp_path, **extra):
    return {
        "KB_ENV": "production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "kb.example.com",
        "KB_DATA_DIR": str(tmp_path),
        **extra,
    }


def test_check_deploy_is_clean_in_production(tmp_path):
    result = run_manage(
        "check", "--deploy", "--fail-level", "WARNING", env=production_env(tmp_path)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_refuses_to_start_without_its_secrets(tmp_path):
    missing_key = run_manage("check", env=production_env(tmp_path, DJANGO_SECRET_KEY=""))
    assert missing_key.returncode != 0 and "DJANGO_SECRET_KEY must be set" in missing_key.stderr
    missing_hosts = run_manage("check", env=production_env(tmp_path, DJANGO_ALLOWED_HOSTS=""))
    assert (
        missing_hosts.returncode != 0 and "DJANGO_ALLOWED_HOSTS must be set" in missing_hosts.stderr
    )


def test_whitenoise_serves_collected_static_files_with_security_headers(tmp_path):
    env = production_env(tmp_path)
    collected = run_manage("collectstatic", "--noinput", env=env)
    assert collected.returncode == 0, collected.stderr
    probe = run_manage(
        "shell",
        "-c",
        (
            "from django.test import Client; c = Client(HTTP_HOST='kb.example.com'); r = "
            "c.get('/static/kb/search.css', secure=True); plain = c.get('/static/kb/search.css'); "
            "print(r.status_code, r['Content-Type'].split(';')[0], plain.status_code, "
            "c.get('/healthz', secure=True).get('Strict-Transport-Security', '-'), sep='|')"
        ),
        env=env,
    )
    assert probe.returncode == 0, probe.stderr
    status, content_type, insecure, hsts = probe.stdout.strip().splitlines()[-1].split("|")
    assert (status, content_type) == ("200", "text/css")
    assert insecure == "301"  # plain HTTP is redirected to HTTPS
    assert "max-age=31536000" in hsts


def test_replica_urls_become_database_aliases_that_never_migrate(tmp_path):
    code = (
        "from django.conf import settings; from django.db import router; print([(a, d['HOST'], "
        "d['NAME'], d['TEST'].get('MIRROR')) for a, d in sorted(settings.DATABASES.items()) if a "
        "!= 'default']); print(router.allow_migrate('replica_1', 'kb'), "
        "router.allow_migrate('default', 'kb'))"
    )
    env = {
        "KB_DATA_DIR": str(tmp_path),
        "KB_REPLICA_MAX_LAG_SECONDS": "2",
        "DATABASE_REPLICA_URLS": "postgresql://kb@replica-a.internal/kb, "
        "postgresql://kb@replica-b.internal:6432/kb",
    }
    result = run_manage("shell", "-c", code, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    aliases, migrate = result.stdout.strip().splitlines()[-2:]
    assert aliases == (
        "[('replica_1', 'replica-a.internal', 'kb', 'default'), "
        "('replica_2', 'replica-b.internal', 'kb', 'default')]"
    )
    assert migrate == "False True"
    bad = run_manage("check", env={**env, "KB_REPLICA_MAX_LAG_SECONDS": "-1"})
    assert (
        bad.returncode != 0
        and "KB_REPLICA_MAX_LAG_SECONDS must be at least 0" in bad.stdout + bad.stderr
    )

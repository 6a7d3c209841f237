"""Production settings are the default (issue 12, point 6): without DEBUG=1 the app refuses to
start without its secrets, and with them `manage.py check --deploy` finds nothing to warn of."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a production process: nothing of the tests' own (their DEBUG=1)."""
    env = {
        key: value
        for key, value in os.environ.items()
        # DJANGO_ALLOW_ASYNC_UNSAFE: the browser tests' (tests/browser/conftest.py)
        if key
        not in (
            "DEBUG",
            "SECRET_KEY",
            "AUDIT_HMAC_KEY",
            "DATABASE_URL",
            "DJANGO_ALLOW_ASYNC_UNSAFE",
        )
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        VAR_DIR=str(tmp_path / "var"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        ALLOWED_HOSTS="data.example.org",
        **extra,
    )
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_the_default_settings(tmp_path):
    env = production_env(
        tmp_path, SECRET_KEY=secrets.token_urlsafe(50), AUDIT_HMAC_KEY=secrets.token_hex(32)
    )

    # when
    checked = manage(env, "check", "--deploy", "--fail-level", "DEBUG")
    shown = manage(env, "diffsettings", "--all")

    # then nothing at all is reported, and it was production's settings that were checked
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "System check identified no issues (0 silenced)." in checked.stdout
    assert "DEBUG = False" in shown.stdout
    assert "SECURE_SSL_REDIRECT = True" in shown.stdout
    assert "SESSION_COOKIE_SECURE = True" in shown.stdout


def test_production_refuses_to_start_without_its_secrets(tmp_path):
    # when neither secret is given, or only the first
    without_any = manage(production_env(tmp_path), "check")
    without_audit_key = manage(
        production_env(tmp_path, SECRET_KEY=secrets.token_urlsafe(50)), "check"
    )

    # then each names what is missing, and no secret was generated in its place
    assert without_any.returncode != 0
    assert "SECRET_KEY" in without_any.stderr
    assert without_audit_key.returncode != 0
    assert "AUDIT_HMAC_KEY" in without_audit_key.stderr
    assert not (tmp_path / "var" / "secret_key").exists()
    assert not (tmp_path / "var" / "audit_hmac_key").exists()

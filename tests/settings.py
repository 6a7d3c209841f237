"""The tests' settings: the app's own (config/settings.py) in development mode, which generates
its secrets into VAR_DIR and serves plain HTTP to the test client. pytest-django then turns DEBUG
off while tests run; processes the tests start inherit DEBUG=1 unless they set it
(tests/releases/test_production_server.py and tests/test_deploy_settings.py run production's)."""

import os

os.environ["DEBUG"] = "1"

from config.settings import *  # noqa: F403

# Django's advice for tests: a fast password hasher (PBKDF2's million rounds cost 0.6 s a user).
# Processes the tests start (workers, servers) keep production's hashers.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

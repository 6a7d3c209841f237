"""The engine is pure Python (it never imports Django): its tests need no settings, database,
Celery app or private storage, so the web suite's autouse fixtures are replaced by no-ops here.

Session scope keeps Hypothesis' health check quiet: ``@given`` tests must not depend on
function-scoped fixtures, and autouse ones count.
"""

import pytest


@pytest.fixture(scope="session", autouse=True)
def _celery_eager_in_process():
    """No Celery here: the engine runs in-process and never sees a task."""


@pytest.fixture(scope="session", autouse=True)
def _private_dirs():
    """No storage here: the engine reads only the DataFrame it is given."""


@pytest.fixture(scope="session", autouse=True)
def _empty_public_cache():
    """No web cache here: the engine serves no pages."""

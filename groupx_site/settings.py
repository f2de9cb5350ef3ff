"""Django settings for GroupX.

The storage path and the listen address come from ``groupx.json`` (``--config``, ``GROUPX_CONFIG``
or ``./groupx.json``). An invalid config stops the process here, before any database file or child
process is opened; a missing one falls back to the defaults so ``manage.py`` commands still work
(``runserver`` and ``groupx start`` write a starter file first).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from groupx_site.core import sqlite
from groupx_site.static_root import build_root
from groupx_site.store.postgresql import postgresql_database
from setup_wizard.config import ConfigError, GroupXConfig, config_path_from_env, load_config, storage_path
from setup_wizard.storage_check import storage_refusal

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout keeps the page's templates/ and static/ at the top of the repository; an installed wheel
# carries them inside groupx_site (setup.py), where Django finds an app's own templates and static
# files. Only a checkout's own folders are added: a site-packages/templates of another distribution is not ours.
CHECKOUT = (BASE_DIR / "pyproject.toml").is_file() and (BASE_DIR / "templates").is_dir()

GROUPX_CONFIG_PATH = config_path_from_env()
GROUPX_CONFIG = load_config(GROUPX_CONFIG_PATH) if GROUPX_CONFIG_PATH.exists() else GroupXConfig()
GROUPX_DB_PATH = Path(os.environ.get("GROUPX_DB") or storage_path(GROUPX_CONFIG, GROUPX_CONFIG_PATH))
# Another program's database is never opened: Django would create the room's tables in it and switch
# it to WAL (docs/DECISIONS.md D99).
if GROUPX_CONFIG.storage.url is None and (refusal := storage_refusal(GROUPX_DB_PATH)):
    raise ConfigError(f"{GROUPX_CONFIG_PATH}: storage.path: {refusal}")
# Only after the config was validated. Its own user's only, as the database holds the live agents'
# MCP bindings (docs/DECISIONS.md D39); a directory that already exists keeps its mode.
GROUPX_DB_PATH.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

# Not a credential store: GroupX serves only loopback and has no accounts beyond the admin's.
SECRET_KEY = os.environ.get("GROUPX_SECRET_KEY", "groupx-local-only-not-a-secret")
DEBUG = os.environ.get("GROUPX_DEBUG") == "1"
# Loopback names only: a DNS-rebinding page cannot reach the API under another Host.
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    # groupx_site's runserver is daphne's ASGI runserver plus groupx.json's listen address; Django
    # takes a command from the earliest app that has it, so this app comes before daphne, and daphne
    # before staticfiles (whose WSGI runserver it replaces).
    "groupx_site",
    "daphne",
    "channels",  # runworker (split mode's agent worker, docs/DECISIONS.md D43)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_extensions",
    # With ninja installed as an app, /api/docs serves Swagger UI from ninja's own static files and
    # no inline script; otherwise it loads it from a CDN, which the CSP blocks (a blank page).
    "ninja",
    "rooms",
    "turns",
    "agents",
    "memory",
    "setup_wizard",
    "assistant",
]

MIDDLEWARE = [
    "groupx_site.middleware.SecurityHeadersMiddleware",
    # Django's page middleware, skipped under /api/ (groupx_site/middleware.py: pages_only)
    "groupx_site.middleware.CommonMiddleware",
    "groupx_site.middleware.ApiWriteGuardMiddleware",
    "groupx_site.middleware.SessionMiddleware",
    # The language of the pages and of the server's sentences: the page's switch (a cookie), else
    # the browser's Accept-Language (docs/DECISIONS.md D123).
    "groupx_site.middleware.LanguageMiddleware",
    "groupx_site.middleware.CsrfViewMiddleware",
    "groupx_site.middleware.AuthenticationMiddleware",
    "groupx_site.middleware.MessageMiddleware",
    "groupx_site.middleware.XFrameOptionsMiddleware",
    "groupx_site.middleware.ApiErrorShapeMiddleware",
]

ROOT_URLCONF = "groupx_site.urls"
ASGI_APPLICATION = "groupx_site.asgi.application"


def _channel_layers() -> dict:
    """Redis on loopback when groupx.json names one (split mode: web and agent worker in separate
    processes), else the in-memory layer of the one process (docs/DECISIONS.md D43). The prefix
    keeps two rooms sharing one Redis apart: a room is its database file."""
    if GROUPX_CONFIG.channelLayer is None:
        # One process: the wake-ups to the agents' consumer (the bus relays nothing, rooms/bus.py).
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1_000}}}
    room = hashlib.sha256(str(GROUPX_DB_PATH).encode()).hexdigest()[:16]
    # Redis pub/sub, not channels_redis's queue layer: a group_send is one PUBLISH and a message is
    # pushed to its receivers, where the queue layer took four round trips to send and three to
    # receive, each a turn of a busy event loop (~10 ms of a reply, docs/DECISIONS.md D59). Every
    # message is a wake-up or a shortcut, so at-most-once delivery is all the layer owes (D43).
    return {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [GROUPX_CONFIG.channelLayer.redisUrl],
                "prefix": f"groupx:{room}:",
            },
        }
    }


CHANNEL_LAYERS = _channel_layers()
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"] if CHECKOUT else [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Our own writers never wait on each other (one writer thread, D20): a lock held this long is
# another process's. The tests shorten it with GROUPX_BUSY_TIMEOUT_MS.
GROUPX_BUSY_TIMEOUT_MS = int(os.environ.get("GROUPX_BUSY_TIMEOUT_MS") or 5000)

DATABASES = {
    "default": {
        # Django's SQLite backend with each statement's placeholders converted once (D64).
        "ENGINE": sqlite.ENGINE,
        "NAME": GROUPX_DB_PATH,
        "OPTIONS": {
            # BEGIN IMMEDIATE: a DEFERRED read lock upgraded to a write lock fails at once with
            # SQLITE_BUSY; IMMEDIATE waits for the lock instead.
            "transaction_mode": "IMMEDIATE",
            # SQLite's busy timeout: how long a write waits for a lock another process holds
            # before it answers 503 STORE_UNAVAILABLE (FEATURES §18: busy_timeout=5000; D24).
            "timeout": GROUPX_BUSY_TIMEOUT_MS / 1000,
            "init_command": (
                "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;PRAGMA foreign_keys=ON;PRAGMA temp_store=MEMORY"
            ),
        },
        "TEST": {"NAME": os.environ.get("GROUPX_TEST_DB") or None},
    }
}
if GROUPX_CONFIG.storage.url:  # PostgreSQL (docs/DECISIONS.md D53): same models, migrations, behaviour
    DATABASES["default"] = postgresql_database(GROUPX_CONFIG.storage.url, busy_timeout_ms=GROUPX_BUSY_TIMEOUT_MS)

# groupx_site/store/db.py's executors: False in every server; the in-process test tier (tests/unit) sets
# True so database work runs on the test's own thread and connection (docs/DECISIONS.md D29).
GROUPX_DB_INLINE = False

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en"
# English and Simplified Chinese, the language of the protocol (PROTOCOL.md); a browser asking for
# zh-CN, zh-SG or zh falls back to zh-hans (Django's LANG_INFO). Agent and user text is never translated.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
# groupx_site/locale: the catalogs of the pages, their JavaScript (djangojs) and the server's
# sentences, compiled (.mo) and committed, so a wheel or a clone needs no gettext (`make messages`).
LOCALE_PATHS = [Path(__file__).resolve().parent / "locale"]
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# GroupX's own static files: a checkout's static/, or the copy an installed wheel carries in groupx_site.
STATIC_SOURCE = BASE_DIR / "static" if CHECKOUT else Path(__file__).resolve().parent / "static"
STATICFILES_DIRS = [STATIC_SOURCE]
# Fingerprinted copies of them, built by the serving process (groupx_site/static_files.py, D120).
STATIC_ROOT = build_root(STATIC_SOURCE)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "groupx_site.static_files.FingerprintedStorage"},
}

# The protocol's HTTP body ceiling (2 MiB): daphne refuses a larger body with 413 before reading it
# (groupx_site/body_limit.py); Django's own ceiling is the same number.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "groupx": {"handlers": ["console"], "level": os.environ.get("GROUPX_LOG_LEVEL", "INFO")},
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}

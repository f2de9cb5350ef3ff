"""Fingerprinted, long-cached static files (docs/DECISIONS.md D120).

GroupX's own static files (``static/``: the room page, the setup page, the vendored libraries) are
copied once per content, under names that carry their hash, by Django's
``ManifestStaticFilesStorage`` (ES module imports rewritten to the hashed names), into
``settings.STATIC_ROOT`` (``groupx_site/static_root.py``). Every process that serves builds it if it
is missing (``ensure_built``, well under a second, into a staging directory renamed into place, so
servers starting together never see half a build) and serves those names with a year's
``immutable`` caching. Anything else under ``/static/`` (the admin's and the API docs' files, a
file added since the build) keeps its plain name, is served from the sources and revalidated on
every use. If the cache cannot be written the page works as before, unfingerprinted.
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.finders import FileSystemFinder
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.contrib.staticfiles.storage import ManifestStaticFilesStorage, staticfiles_storage
from django.views.static import serve

logger = logging.getLogger(__name__)

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


class FingerprintedStorage(ManifestStaticFilesStorage):
    support_js_module_import_aggregation = True  # `import … from "./api.js"` → "./api.<hash>.js"

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:
            return name  # not fingerprinted (another app's file, no build): served as it is


def ensure_built() -> bool:
    """Build ``STATIC_ROOT`` from ``static/`` unless it exists; True when the page is fingerprinted."""
    root = Path(settings.STATIC_ROOT)
    try:
        if not (root / FingerprintedStorage.manifest_name).exists():
            _build(root)
    except (OSError, ValueError) as error:  # an unwritable cache, a file the storage cannot hash
        logger.warning("static files are served without fingerprints: %s", error)
        return False
    # The storage may have read its (then missing) manifest already.
    staticfiles_storage.hashed_files, staticfiles_storage.manifest_hash = staticfiles_storage.load_manifest()
    built_names.cache_clear()
    return True


def _build(root: Path) -> None:
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root.parent))
    try:
        storage = FingerprintedStorage(location=staging, base_url=settings.STATIC_URL)
        found = {}
        for path, source in FileSystemFinder().list([]):  # STATICFILES_DIRS: GroupX's own files
            with source.open(path) as handle:
                storage.save(path, handle)
            found[path] = (source, path)
        for _name, _hashed, processed in storage.post_process(found):
            if isinstance(processed, Exception):
                raise processed
        try:
            staging.rename(root)
        except OSError:
            if not (root / FingerprintedStorage.manifest_name).exists():
                raise
            # Another process built the same content first: its copy is as good.
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@functools.cache
def built_names() -> frozenset[str]:
    return frozenset(staticfiles_storage.hashed_files.values())


class FingerprintedStaticHandler(ASGIStaticFilesHandler):
    """``/static/``: a fingerprinted name from ``STATIC_ROOT`` cached for a year, anything else from
    the sources (Django's own static handler) and revalidated."""

    def serve(self, request):
        name = self.file_path(request.path)
        if name in built_names():
            response = serve(request, name, document_root=settings.STATIC_ROOT)
            response["Cache-Control"] = IMMUTABLE
        else:
            response = super().serve(request)
            response["Cache-Control"] = REVALIDATE
        return response

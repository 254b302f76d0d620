"""URL pieces shared by every API router."""

#: Slugs in URLs may contain dots (``llama-3.1-70b``); DRF's default lookup regex excludes them.
SLUG_IN_URL = r"[a-z0-9][a-z0-9._-]*"

"""The Streamlit code of the app. Importing anything from lib.ui starts the server's work first
(lib/ui/startup.py: heavy imports under one lock, the background pre-computation), once per
process: on a fresh server Streamlit may run a deep-linked page file before app.py, and its
imports would otherwise race other sessions'. So a page's first lib import is from lib.ui
(tests/unit/test_startup_imports.py), and no page repeats a start-up ritual."""
from lib.ui import startup as _startup

_startup.once()

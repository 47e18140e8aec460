"""The server's machinery, below the pages' UI (lib/ui) and free of Streamlit but for one adapter.

- results.py      `cached(fn)`: results shared by every session (memo.py: single-flight, bounded
                  in bytes; result_store.py: persisted to the cache folder, by code version)
- jobs.py         `start(*calls)`: a page's independent computations side by side
- prewarm.py      every page's default state computed in the background, yielding to visitors
- page_visit.py   the server opening one of its own pages over Streamlit's websocket protocol
- serve.py        `python -m lib.serving.serve`: `streamlit run app.py` that starts its work at once
- streamlit_adapter.py  the one module here that imports Streamlit: the session's cancellation
                  probe (lib.core.cancellation), the background visitor's mark, the server's URL
The benchmark (bench/) and the tests run all of it headless.
"""

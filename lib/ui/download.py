"""One place for downloads: every figure offers its HTML (interactive) and its data as CSV.
(PNG comes from the camera button in the figure's own toolbar.)"""
from __future__ import annotations

import csv
import io

import streamlit as st


def to_csv(columns: dict[str, list]) -> str:
    """{column: values} (equal lengths) -> CSV text."""
    names = list(columns)
    n = max((len(v) for v in columns.values()), default=0)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(names)
    for i in range(n):
        w.writerow([columns[c][i] if i < len(columns[c]) else "" for c in names])
    return buf.getvalue()


def figure_downloads(fig, name: str, data: dict[str, list] | None, labels: dict[str, str], key: str):
    cols = st.columns([1, 1, 4])
    # Callables: the files are built only when a visitor clicks (keeps reruns fast).
    cols[0].download_button(labels["html"], lambda: fig.to_html(include_plotlyjs=True, full_html=True),
                            file_name=f"{name}.html", mime="text/html", key=f"{key}.html",
                            on_click="ignore")
    if data:
        cols[1].download_button(labels["csv"], lambda: to_csv(data), file_name=f"{name}.csv", mime="text/csv",
                                key=f"{key}.csv", on_click="ignore")

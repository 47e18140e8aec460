# LLM Inference Lab in a container: CPU-only torch, the model prepared at build time, a non-root
# user, a health check on Streamlit's own endpoint. Same make targets as a laptop.
#
#   docker build -t llm-inference-lab .
#   docker run --rm -p 8501:8501 --memory 2g llm-inference-lab
#
# See docs/DEPLOY.md (what was and was not run where this file was written).
FROM python:3.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LLM_LAB_CACHE=/app/.model-cache HF_HUB_OFFLINE=1 \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false STREAMLIT_SERVER_HEADLESS=true

RUN apt-get update && apt-get install -y --no-install-recommends make curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 lab
WORKDIR /app
COPY --chown=lab:lab requirements.txt requirements-app.txt requirements-dev.txt Makefile ./
USER lab
# torch's CPU-only build first (no CUDA libraries), then everything else; `make setup` sees the
# pins satisfied. PYTHON= points make at the image's interpreter.
RUN make setup PYTHON=/usr/local/bin/python3.12 TORCH_INDEX=https://download.pytorch.org/whl/cpu
COPY --chown=lab:lab . .
# the model is prepared at build time (~1 GB of files in $LLM_LAB_CACHE; peak ~0.75 GB resident)
RUN make model

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8501/_stcore/health || exit 1
CMD ["make", "run", "PORT=8501"]

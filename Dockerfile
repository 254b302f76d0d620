# fleetcap's one image: web (gunicorn), worker and beat (Celery), and the migrate step (compose.yaml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    FLEETCAP_VAR_DIR=/var/lib/fleetcap

# pg_dump / pg_restore for scripts/backup.sh and scripts/restore.sh run inside the image.
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .

# Static files collected once into the image (whitenoise serves them from gunicorn). The settings need
# a secret key to import; this throwaway one exists only in this build step.
RUN useradd --system --uid 10001 --home-dir /var/lib/fleetcap fleetcap \
    && mkdir -p /var/lib/fleetcap/bills \
    && FLEETCAP_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v0 \
    && chown -R fleetcap /var/lib/fleetcap

USER fleetcap
EXPOSE 8000
# gunicorn reads /app/gunicorn.conf.py (worker model, workers, threads, timeouts from FLEETCAP_WEB_*).
CMD ["gunicorn", "-c", "gunicorn.conf.py", "fleet.project.wsgi"]

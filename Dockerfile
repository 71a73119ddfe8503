# syntax=docker/dockerfile:1
# rewake as a container: `rewake serve` by default, `rewake sweep` for a sidecar.
#
#   docker build -t rewake .
#   docker run -p 8600:8600 -v "$PWD/api_tokens:/run/secrets/api_tokens:ro" \
#       -e REWAKE_API_TOKENS_FILE=/run/secrets/api_tokens rewake   # a file holding admin:<secret>
#   docker run rewake rewake sweep --metrics-port 9610 --metrics-host 0.0.0.0   # the sidecar
#
# The API listens on 0.0.0.0 inside the container, and rewake refuses to bind beyond loopback
# without REWAKE_API_TOKENS: give it tokens, as a file (compose.yaml and docs/k8s/ mount secrets).

# Any Debian-based image with Python 3.11 or newer; the slim image keeps compilers out.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . .
# Every dependency is pure Python or ships a binary wheel (psycopg[binary]), so the builder
# needs no compiler either; --only-binary makes a missing wheel fail here instead of
# silently needing one.
RUN python3 -m venv /opt/rewake \
 && /opt/rewake/bin/pip wheel --wheel-dir /wheels --only-binary=:all: --no-binary=rewake ".[postgres]" \
 && /opt/rewake/bin/pip install --no-index --find-links /wheels "rewake[postgres]" \
 && /opt/rewake/bin/pip uninstall --yes pip \
 && /opt/rewake/bin/rewake --help > /dev/null

FROM ${PYTHON_IMAGE}
# The system zone database: zoneinfo reads it before the tzdata wheel, and REWAKE_DISPLAY_ZONE
# and the runner's zone look-ups name IANA zones.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 rewake \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/rewake --create-home \
        --shell /usr/sbin/nologin rewake
COPY --from=builder /opt/rewake /opt/rewake
ENV PATH=/opt/rewake/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    REWAKE_LOG_JSON=true
# The default SQLite file, rewake.db, lands in the working directory: the one place the user
# may write. With PostgreSQL (REWAKE_DATABASE_URL) the root file system can be read-only.
WORKDIR /var/lib/rewake
VOLUME ["/var/lib/rewake"]
USER 10001:10001
EXPOSE 8600 9610
# /healthz needs no token and no database; the port follows REWAKE_PORT like `rewake serve`.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('REWAKE_PORT', '8600') + '/healthz', timeout=4)"]
CMD ["rewake", "serve", "--host", "0.0.0.0"]

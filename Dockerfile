# syntax=docker/dockerfile:1
# The base image by digest (its tag moves; the digest does not). To move it on:
#   docker buildx imagetools inspect python:3.11-slim
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7 AS build
WORKDIR /src
# the dependencies exactly as locked (make lock), a layer of their own, then the project
COPY requirements.lock ./
RUN python -m venv /opt/aster \
 && /opt/aster/bin/pip install --no-cache-dir --upgrade pip==24.2 \
 && /opt/aster/bin/pip install --no-cache-dir --no-deps -r requirements.lock
COPY pyproject.toml README.md LICENSE ./
COPY service ./service
RUN /opt/aster/bin/pip install --no-cache-dir --no-deps . \
 && /opt/aster/bin/pip check

FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7
RUN groupadd --system --gid 10001 aster \
 && useradd --system --uid 10001 --gid aster --home-dir /data --shell /usr/sbin/nologin aster \
 && mkdir -p /data \
 && chown aster:aster /data \
 && chmod 0700 /data
COPY --from=build /opt/aster /opt/aster
ENV PATH=/opt/aster/bin:$PATH \
    ASTER_HOME=/data \
    ASTER_HOST=0.0.0.0 \
    ASTER_PORT=4627 \
    ASTER_AUTH=token \
    ASTER_ALLOWED_HOSTS=aster-persist
USER 10001:10001
VOLUME ["/data"]
EXPOSE 4627
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:4627/healthz', timeout=2)"]
ENTRYPOINT ["aster-persist"]
CMD ["serve"]

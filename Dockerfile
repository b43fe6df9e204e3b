# memtrove over streamable HTTP; see docker-compose.yml for PostgreSQL and the Chroma server beside it.
# What the build context leaves out is in .dockerignore (no .venv, caches, local data or tests).
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir "/app[postgres]"
# A container runs one server that owns its data dir: no shared owner process to start or bridge to.
ENV MEMTROVE_DATA_DIR=/data MEMTROVE_TRANSPORT=http MEMTROVE_HOST=0.0.0.0 MEMTROVE_SHARED=false
VOLUME ["/data"]
EXPOSE 3000
CMD ["memtrove", "serve"]

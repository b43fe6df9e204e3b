# memtrove over streamable HTTP; see docker-compose.yml for the Chroma server beside it.
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir "/app[postgres]"
ENV MEMTROVE_DATA_DIR=/data MEMTROVE_TRANSPORT=http MEMTROVE_HOST=0.0.0.0
VOLUME ["/data"]
EXPOSE 3000
CMD ["memtrove", "serve"]

# PostgreSQL (Airflow's metadata database) and Redis (the Celery broker) from Debian's packages, in one image that
# docker-compose.yml runs as two services (one apt layer, one image to build and keep). Build from the repository
# root: docker build -f docker/services.Dockerfile -t crawlcycle-services .
# BASE_IMAGE is any Debian bookworm image (PostgreSQL 15, Redis 7).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

# No cluster at install time: the entry point makes one in the data volume on the first start.
RUN set -eu; \
    mkdir -p /etc/postgresql-common/createcluster.d; \
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/no-main-cluster.conf; \
    apt-get update -q; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-15 redis-server; \
    rm -rf /var/lib/apt/lists/*; \
    mkdir -p /var/lib/postgresql/data; \
    chown postgres:postgres /var/lib/postgresql/data; \
    chmod 700 /var/lib/postgresql/data

COPY docker/services-entrypoint.sh /usr/local/bin/services-entrypoint.sh
RUN chmod 755 /usr/local/bin/services-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data \
    PGHOST=/tmp
USER postgres
ENTRYPOINT ["/usr/local/bin/services-entrypoint.sh"]
CMD ["postgres"]
# For whichever of the two the container runs; docker-compose.yml gives each service its own check.
HEALTHCHECK --interval=10s --timeout=10s --start-period=10s --retries=10 \
    CMD ["/usr/local/bin/services-entrypoint.sh", "health"]

#!/bin/sh
# Entry point of the services image (docker/services.Dockerfile):
#   postgres [ARG...]  initialise $PGDATA on the first start (user $POSTGRES_USER with $POSTGRES_PASSWORD,
#                      database $POSTGRES_DB, as the official postgres image does), then run PostgreSQL on every
#                      interface with ARGs added; its socket is in $PGHOST (/tmp), which the client tools read
#   health             check whichever of PostgreSQL and Redis this container runs (the image's HEALTHCHECK)
#   anything else      run as given (redis-server ... for Redis)
set -eu

case "${1:-}" in
postgres)
    shift
    : "${POSTGRES_USER:=airflow}" "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}" "${POSTGRES_DB:=$POSTGRES_USER}"
    if [ ! -s "$PGDATA/PG_VERSION" ]; then
        pwfile=$(mktemp)
        printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
        initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --auth-local=trust \
            --auth-host=scram-sha-256 >/dev/null
        rm -f "$pwfile"
        # initdb admits loopback only: the other containers connect from their own addresses, with the password.
        echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
        pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k $PGHOST" -w -s start
        if [ "$POSTGRES_DB" != "postgres" ]; then
            createdb -U "$POSTGRES_USER" "$POSTGRES_DB"
        fi
        pg_ctl -D "$PGDATA" -m fast -w -s stop
        echo "initialised $PGDATA: user $POSTGRES_USER, database $POSTGRES_DB"
    fi
    exec postgres -D "$PGDATA" -c listen_addresses='*' -k "$PGHOST" "$@"
    ;;
health)
    # The running server and its port (PostgreSQL's -p argument, Redis's process title); procps is not installed.
    for proc in /proc/[0-9]*; do
        args=$(tr '\0' '\n' < "$proc/cmdline" 2>/dev/null) || continue
        first=$(printf '%s\n' "$args" | head -n 1)
        case "$first" in
        postgres | */postgres)
            port=$(printf '%s\n' "$args" | sed -n '/^-p$/{n;p;q}')
            exec pg_isready -q -h 127.0.0.1 -p "${port:-5432}" -U "${POSTGRES_USER:-airflow}"
            ;;
        redis-server* | */redis-server*)
            # Redis shows its address in its process title: "redis-server *:PORT".
            port=${first##*:}
            [ "$(redis-cli -h 127.0.0.1 -p "${port:-6379}" ping)" = PONG ]
            exit
            ;;
        esac
    done
    echo "neither postgres nor redis-server runs" >&2
    exit 1
    ;;
*)
    exec "$@"
    ;;
esac

#!/bin/sh
# Creates one database per service that keeps state in PostgreSQL, named after the service
# (BOXOFFICE_DATABASES, set in docker-compose.yml). Each service owns its schema and applies
# its own migrations at start; no service reads another's database.
#
# The postgres image runs this once, when the data volume is first initialised: after adding
# a service, `docker compose down -v` (which deletes the data) or create its database by hand.
set -eu

for db in ${BOXOFFICE_DATABASES:?set BOXOFFICE_DATABASES to the databases to create}; do
	echo "postgres-init: creating database $db"
	psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
		-c "CREATE DATABASE \"$db\" OWNER \"$POSTGRES_USER\""
done

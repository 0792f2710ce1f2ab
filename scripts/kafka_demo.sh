#!/usr/bin/env bash
# `make demo-kafka`: the Kafka example pipeline (conf/kafka_orders.yaml) against a local Apache Kafka broker on
# 127.0.0.1:9092, started here and stopped at the end (its log folder runs/kafka is kept): two batches of order
# events (one value is not JSON), an update after each; the second reads only the new records.
set -euo pipefail
cd "$(dirname "$0")/.."
medallion=.venv/bin/medallion
export MEDALLION_NO_SERVER=1

$medallion kafka start
trap '$medallion kafka stop' EXIT
$medallion kafka topic orders order_status
event() { printf '{"order_id": %d, "status": "%s", "amount": %s, "updated_at": "2026-01-01T10:%02d:00Z"}\n' "$@"; }
{ event 1 new 10.0 0; event 2 new 5.5 1; echo 'not json {'; event 1 paid 10.0 2; } | $medallion kafka produce orders
$medallion run conf/kafka_orders.yaml --no-report
{ event 2 shipped 5.5 3; event 3 new 7.25 4; } | $medallion kafka produce orders
$medallion run conf/kafka_orders.yaml --no-report

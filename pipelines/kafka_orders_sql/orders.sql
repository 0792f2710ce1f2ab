-- Kafka → bronze → silver → APPLY CHANGES in SQL: pipelines/kafka_orders/orders.py with read_kafka.
-- A value that does not parse keeps its text in _corrupt_record (never dropped); orders_quarantine holds the
-- records that silver's rules drop. Runs unchanged on Databricks (the broker is yours).

CREATE OR REFRESH STREAMING TABLE orders_bronze (
  CONSTRAINT value_is_json EXPECT (_corrupt_record IS NULL)
)
COMMENT "Order events as read from Kafka, the JSON value parsed"
TBLPROPERTIES ("quality" = "bronze")
AS SELECT CAST(key AS STRING) AS kafka_key, event.*, topic, partition, offset, timestamp AS kafka_timestamp
FROM (
  SELECT *, from_json(CAST(value AS STRING),
                      'order_id BIGINT, status STRING, amount DOUBLE, updated_at TIMESTAMP, _corrupt_record STRING',
                      map('columnNameOfCorruptRecord', '_corrupt_record')) AS event
  FROM STREAM read_kafka(bootstrapServers => '${orders.kafka_servers}', subscribe => '${orders.topic}',
                         startingOffsets => 'earliest', maxOffsetsPerTrigger => 100000)
);

CREATE OR REFRESH STREAMING TABLE orders_silver (
  CONSTRAINT value_is_json EXPECT (_corrupt_record IS NULL) ON VIOLATION DROP ROW,
  CONSTRAINT has_order_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW
)
COMMENT "Valid order events"
AS SELECT * FROM STREAM(orders_bronze);

CREATE OR REFRESH STREAMING TABLE orders_quarantine
COMMENT "Order events that failed silver's rules, kept as they came"
AS SELECT * FROM STREAM(orders_bronze) WHERE _corrupt_record IS NOT NULL OR order_id IS NULL;

CREATE OR REFRESH STREAMING TABLE orders COMMENT "Each order's latest state (SCD type 1)";

APPLY CHANGES INTO orders
FROM STREAM(orders_silver)
KEYS (order_id)
SEQUENCE BY updated_at
COLUMNS * EXCEPT (kafka_key, topic, partition, offset, kafka_timestamp, _corrupt_record)
STORED AS SCD TYPE 1;

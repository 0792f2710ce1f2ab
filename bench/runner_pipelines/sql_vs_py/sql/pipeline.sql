-- The bench_sql pipeline in DLT SQL; py/pipeline.py is the same pipeline written with the Python API.
CREATE OR REFRESH STREAMING TABLE orders_bronze
COMMENT 'Orders as landed (JSON), through Auto Loader'
AS SELECT * FROM STREAM read_files('${bench.landing}', format => 'json',
  schema => 'order_id BIGINT, ts TIMESTAMP, customer_id BIGINT, amount DOUBLE, qty INT, status STRING, country STRING, note STRING');

CREATE OR REFRESH STREAMING TABLE orders_silver (
  CONSTRAINT positive_amount EXPECT (amount > 0) ON VIOLATION DROP ROW,
  CONSTRAINT has_status EXPECT (status IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT known_country EXPECT (country IN ('DE', 'FR', 'US', 'JP', 'BR'))
) COMMENT 'Valid orders'
AS SELECT order_id, ts, customer_id, amount, qty, status, country, to_date(ts) AS order_date, amount * qty AS total
FROM STREAM(LIVE.orders_bronze);

CREATE OR REFRESH MATERIALIZED VIEW revenue_by_day_country COMMENT 'Revenue per day and country'
AS SELECT order_date, country, count(1) AS orders, round(sum(total), 2) AS revenue, avg(qty) AS avg_qty
FROM LIVE.orders_silver GROUP BY order_date, country;

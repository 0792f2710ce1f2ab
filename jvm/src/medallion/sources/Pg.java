package medallion.sources;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * PostgreSQL through its JDBC driver: connections in a UTC session, the catalog lookup, and the SQL of the
 * watermark bounds and of the reads, written as {@code framework/sources/pgclient.py} writes them (values inlined
 * as quoted literals cast to the column's type; offsets are the column's own text in a UTC session).
 */
final class Pg {
  private Pg() {}

  /** A connection in a UTC, ISO-dated session; a {@link SourceException} when it cannot be made. */
  static Connection connect(IncrementalOptions options) {
    try {
      Connection conn = DriverManager.getConnection(options.url, options.connectionProperties());
      try (Statement st = conn.createStatement()) {
        st.execute("SET TIME ZONE 'UTC'; SET DateStyle = ISO");
      }
      return conn;
    } catch (SQLException e) {
      throw SourceException.of(e, "connect to read " + options.shortRelation(), options);
    }
  }

  /** The first column of the first row of {@code sql} as text (null when there is no row or it is NULL). */
  static String scalar(Connection conn, IncrementalOptions options, String sql) {
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (SQLException e) {
      throw SourceException.of(e, "query " + options.shortRelation(), options);
    }
  }

  /** The columns of the first row of {@code sql} as text (null when there is no row). */
  static String[] row(Connection conn, IncrementalOptions options, String sql) {
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      if (!rs.next()) {
        return null;
      }
      String[] out = new String[rs.getMetaData().getColumnCount()];
      for (int i = 0; i < out.length; i++) {
        out[i] = rs.getString(i + 1);
      }
      return out;
    } catch (SQLException e) {
      throw SourceException.of(e, "query " + options.shortRelation(), options);
    }
  }

  /**
   * Whether the relation's rows have an {@code xmin} to compare with the transactions in flight: a table or a
   * partitioned table named by {@code dbtable} (a query, a view or a foreign table has none).
   */
  static boolean tracksTransactions(Connection conn, IncrementalOptions options) {
    if (options.relation.startsWith("(")) {
      return false;
    }
    String kind = scalar(conn, options, "SELECT c.relkind::text FROM pg_catalog.pg_class c WHERE c.oid = CAST("
        + literal(options.relation) + " AS regclass)");
    return kind != null && InFlight.TRACKED_RELKINDS.contains(kind);
  }

  /**
   * {@code boundSql}'s value (a batch's end; NULL when null) with, from the same statement's snapshot, the
   * transactions in flight: {@code pg_current_snapshot()}, and the ids from its {@code xmin} to the next one to be
   * assigned ({@code xmax + age(xmax)}) found in progress (see {@link InFlight}).
   */
  static String offsetSql(String boundSql) {
    String bound = boundSql == null ? "NULL" : "(" + boundSql + ")";
    String xmax = "pg_snapshot_xmax(s)::text::bigint";
    return "SELECT " + bound + ", s::text, (SELECT string_agg(x::text, ',') FROM generate_series("
        + "pg_snapshot_xmin(s)::text::bigint, " + xmax + " + age(CAST((" + xmax + " % 4294967296)::text AS xid)) - 1) "
        + "AS x WHERE pg_xact_status(x::text::xid8) = 'in progress') FROM (SELECT pg_current_snapshot() AS s) AS snap";
  }

  /** Every value of the first column of {@code sql}, as text. */
  static List<String> column(Connection conn, IncrementalOptions options, String sql) {
    List<String> out = new ArrayList<>();
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        if (rs.getString(1) != null) {
          out.add(rs.getString(1));
        }
      }
      return out;
    } catch (SQLException e) {
      throw SourceException.of(e, "query " + options.shortRelation(), options);
    }
  }

  /** The relation's columns from {@code pg_catalog} (for a query: of a temporary view of it, rolled back). */
  static List<PgColumn> describe(Connection conn, IncrementalOptions options) {
    String lookup = "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
        + "WHERE a.attrelid = CAST(%s AS regclass) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum";
    List<PgColumn> columns = new ArrayList<>();
    try {
      conn.setAutoCommit(false);
      try (Statement st = conn.createStatement()) {
        String rel = literal(options.relation);
        if (options.relation.startsWith("(")) {
          st.execute("CREATE TEMPORARY VIEW medallion_probe AS SELECT * FROM " + options.relation);
          rel = literal("medallion_probe");
        }
        try (ResultSet rs = st.executeQuery(String.format(lookup, rel))) {
          while (rs.next()) {
            columns.add(new PgColumn(rs.getString(1), rs.getString(2)));
          }
        }
      } finally {
        conn.rollback();
        conn.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw SourceException.of(e, "describe " + options.shortRelation(), options);
    }
    if (columns.isEmpty()) {
      throw SourceException.query(options.shortRelation() + " has no columns");
    }
    return columns;
  }

  static String quoteIdent(String name) {
    return '"' + name.replace("\"", "\"\"") + '"';
  }

  static String literal(String text) {
    return "'" + text.replace("'", "''") + "'";
  }

  /** An offset's text as a value of the watermark column's type. */
  static String typed(String value, PgColumn column) {
    return "CAST(" + literal(value) + " AS " + column.dbType + ")";
  }

  /** The lower bound of a batch: the start offset less {@code lookback} (an interval or a number). */
  static String lowered(String value, PgColumn column, IncrementalOptions options) {
    String base = typed(value, column);
    if (options.lookback == null) {
      return base;
    }
    if (options.lookbackIsInterval()) {
      return "(" + base + " - CAST(" + literal(options.lookback) + " AS interval))";
    }
    return "(" + base + " - " + new java.math.BigDecimal(options.lookback.trim()).toPlainString() + ")";
  }

  /** The next batch's end: the greatest watermark in {@code (lower, upper]}, or the {@code maxRows}-th one. */
  static String maxWatermarkSql(String relation, PgColumn column, String lower, String upper, long maxRows) {
    String col = column.quoted();
    StringBuilder cond = new StringBuilder(col + " IS NOT NULL");
    if (lower != null) {
      cond.append(" AND ").append(col).append(" > ").append(typed(lower, column));
    }
    if (upper != null) {
      cond.append(" AND ").append(col).append(" <= ").append(typed(upper, column));
    }
    String max = "SELECT max(" + col + ")::text FROM " + relation + " WHERE " + cond;
    if (maxRows <= 0) {
      return max;
    }
    // ordered by the column itself, not by its text (an output column named like it would win in ORDER BY)
    return "SELECT coalesce((SELECT w::text FROM (SELECT " + col + " AS w FROM " + relation + " WHERE " + cond
        + " ORDER BY " + col + " OFFSET " + (maxRows - 1) + " LIMIT 1) AS o), (" + max + "))";
  }

  static String nullCountSql(String relation, PgColumn column) {
    return "SELECT count(*) FROM " + relation + " WHERE " + column.quoted() + " IS NULL";
  }

  /** {@code parts - 1} evenly spaced inner bounds of {@code (lower, upper]}, in the column's own arithmetic. */
  static String splitPointsSql(String relation, PgColumn column, String lower, String upper, int parts) {
    String col = column.quoted();
    String low = lower != null ? lower : "(SELECT min(" + col + ") FROM " + relation + " WHERE " + col + " <= " + upper + ")";
    return "SELECT p::text FROM (SELECT CAST((" + low + " + (" + upper + " - " + low + ") * k / " + parts + ") AS "
        + column.dbType + ") AS p FROM generate_series(1, " + (parts - 1) + ") AS k) AS s WHERE p > " + low
        + " AND p < " + upper + " GROUP BY p ORDER BY p";
  }

  /** The planner's histogram bounds of the column inside {@code (lower, upper)}, in order (none without stats). */
  static String histogramSql(String relation, PgColumn column, String lower, String upper) {
    String cond = "b < " + upper + (lower == null ? "" : " AND b > " + lower);
    return "SELECT b::text FROM (SELECT unnest(s.histogram_bounds::text::" + column.dbType + "[]) AS b "
        + "FROM pg_catalog.pg_stats s WHERE (s.schemaname, s.tablename) = (SELECT n.nspname, c.relname "
        + "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        + "WHERE c.oid = CAST(" + literal(relation) + " AS regclass)) AND s.attname = " + literal(column.name)
        + ") AS h WHERE " + cond + " ORDER BY b";
  }

  /** The planner's plan (JSON, with its row estimate) of reading {@code (lower, upper]}. */
  static String estimateSql(String relation, PgColumn column, String lower, String upper) {
    String col = column.quoted();
    String cond = lower == null ? col + " <= " + upper : col + " > " + lower + " AND " + col + " <= " + upper;
    return "EXPLAIN (FORMAT JSON) SELECT 1 FROM " + relation + " WHERE " + cond;
  }

  /**
   * The read of one range: {@code lower < column <= upper} (no lower bound: everything up to {@code upper}), less
   * the rows {@code excluded} names (those of transactions in flight; null: none).
   */
  static String rangeSql(String relation, List<PgColumn> columns, PgColumn column, String lower, String upper,
      String excluded) {
    String col = column.quoted();
    String cond = lower == null ? col + " <= " + upper : col + " > " + lower + " AND " + col + " <= " + upper;
    return rowsSql(relation, columns, excluded == null ? cond : cond + " AND " + excluded);
  }

  /** The read of the rows {@code condition} selects. */
  static String rowsSql(String relation, List<PgColumn> columns, String condition) {
    StringBuilder select = new StringBuilder();
    for (PgColumn c : columns) {
      select.append(select.length() == 0 ? "" : ", ").append(c.selectExpression());
    }
    return "SELECT " + select + " FROM " + relation + " WHERE " + condition;
  }
}

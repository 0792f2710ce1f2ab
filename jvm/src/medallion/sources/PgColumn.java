package medallion.sources;

import java.io.Serializable;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;

/**
 * One column of the relation read: its name, its type as {@code pg_catalog.format_type} prints it, and its Spark
 * type, mapped as {@code framework/sources/pgtypes.py} maps it (the two must agree: a checkpoint or a table written
 * by one is read by the other).
 */
final class PgColumn implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final Map<String, DataType> SIMPLE = Map.ofEntries(
      Map.entry("smallint", DataTypes.ShortType), Map.entry("integer", DataTypes.IntegerType),
      Map.entry("bigint", DataTypes.LongType), Map.entry("real", DataTypes.FloatType),
      Map.entry("double precision", DataTypes.DoubleType), Map.entry("boolean", DataTypes.BooleanType),
      Map.entry("text", DataTypes.StringType), Map.entry("character varying", DataTypes.StringType),
      Map.entry("character", DataTypes.StringType), Map.entry("\"char\"", DataTypes.StringType),
      Map.entry("name", DataTypes.StringType), Map.entry("citext", DataTypes.StringType),
      Map.entry("json", DataTypes.StringType), Map.entry("jsonb", DataTypes.StringType),
      Map.entry("uuid", DataTypes.StringType), Map.entry("date", DataTypes.DateType),
      Map.entry("timestamp without time zone", DataTypes.TimestampType),
      Map.entry("timestamp with time zone", DataTypes.TimestampType), Map.entry("bytea", DataTypes.BinaryType));
  /** Selected as text: the JDBC driver hands these over as objects Spark's getters do not take. */
  private static final java.util.Set<String> TEXT_CAST =
      java.util.Set.of("json", "jsonb", "uuid", "citext", "name", "\"char\"");
  private static final Pattern MODIFIER = Pattern.compile("\\(.*?\\)");
  private static final Pattern NUMERIC = Pattern.compile("^numeric(?:\\((\\d+)(?:,\\s*(-?\\d+))?\\))?$");

  final String name;
  final String dbType;
  final DataType sparkType;

  PgColumn(String name, String dbType) {
    this.name = name;
    this.dbType = dbType;
    this.sparkType = sparkType(name, dbType);
  }

  String baseType() {
    return MODIFIER.matcher(dbType).replaceAll("").trim();
  }

  String quoted() {
    return Pg.quoteIdent(name);
  }

  /** The column in a read's select list: as text, as a UTC instant, or as it is. */
  String selectExpression() {
    String base = baseType();
    if (TEXT_CAST.contains(base)) {
      return quoted() + "::text AS " + quoted();
    }
    if (base.equals("timestamp without time zone")) { // a wall-clock time is read as UTC, as the Python source does
      return "(" + quoted() + " AT TIME ZONE 'UTC') AS " + quoted();
    }
    return quoted();
  }

  /** {@code number} or {@code time}: what {@code lookback} must be; an error for a column that cannot order rows. */
  String watermarkKind() {
    if (sparkType instanceof DecimalType || sparkType == DataTypes.ShortType || sparkType == DataTypes.IntegerType
        || sparkType == DataTypes.LongType) {
      return "number";
    }
    if (sparkType == DataTypes.DateType || sparkType == DataTypes.TimestampType) {
      return "time";
    }
    throw SourceException.options("watermark column '" + name + "' is " + dbType + ": it must be a timestamp, "
        + "date, integer or numeric column");
  }

  static DataType sparkType(String name, String dbType) {
    String text = dbType.trim().toLowerCase(Locale.ROOT);
    Matcher numeric = NUMERIC.matcher(text);
    if (numeric.matches()) {
      if (numeric.group(1) == null) {
        return DataTypes.createDecimalType(38, 18);
      }
      int p = Integer.parseInt(numeric.group(1));
      int s = numeric.group(2) == null ? 0 : Integer.parseInt(numeric.group(2));
      if (p > 38 || s < 0 || s > p) {
        throw SourceException.options("column '" + name + "' is " + dbType + ": Spark decimals hold at most 38 "
            + "digits with a scale from 0 to the precision; cast it in a 'query'");
      }
      return DataTypes.createDecimalType(p, s);
    }
    String base = MODIFIER.matcher(text).replaceAll("").trim();
    DataType simple = SIMPLE.get(base);
    if (simple == null || text.endsWith("[]")) {
      throw SourceException.options("column '" + name + "' has the unsupported type " + dbType + ": cast it to "
          + "a supported type in a 'query' option (integers, numeric, text, boolean, date, timestamp, json, uuid, "
          + "bytea)");
    }
    return simple;
  }
}

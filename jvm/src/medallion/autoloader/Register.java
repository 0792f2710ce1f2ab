package medallion.autoloader;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;

/**
 * Registers the parsers as Spark SQL functions, called from {@code framework/autoloader/jvm.py}. Done here rather
 * than through py4j because {@code functions.udf} is overloaded ({@code UDF1}, ..., and the untyped
 * {@code Object} variant Spark refuses); py4j may pick either, Java's compiler picks the typed one.
 */
public final class Register {
  private Register() {}

  /** {@link JsonFields} with this configuration, as the deterministic function {@code name}. */
  public static void json(SparkSession spark, String name, String config, String returnType) {
    UserDefinedFunction f = functions.udf(new JsonFields(config), DataType.fromDDL(returnType));
    spark.udf().register(name, f);
  }

  /**
   * {@link CsvLines} with this configuration, as the non-deterministic function {@code name}. The configuration is
   * parsed here first, so that bad CSV options fail on the driver when the flow is defined, not in a task.
   */
  public static void csv(SparkSession spark, String name, String config, String returnType) {
    CsvLayout.parse(config);
    UserDefinedFunction f = functions.udf(new CsvLines(config), DataType.fromDDL(returnType)).asNondeterministic();
    spark.udf().register(name, f);
  }
}

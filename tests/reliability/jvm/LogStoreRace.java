import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import io.delta.storage.LogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * One of two processes writing the same Delta log versions at the same moments through a LogStore, each with
 * overwrite=false (tests/reliability/test_log_store_race.py). Run with the source launcher:
 * {@code java -cp <jars> LogStoreRace.java <store class> <log dir> <barrier file> <writer 0|1> <versions>}.
 *
 * <p>It writes one file outside the race (class loading, the file system's start), then, for each version, meets
 * the other writer at a barrier (two counters in a file both processes map into memory; spinning on them releases
 * both within microseconds, where waiting for a file to appear takes milliseconds on a loaded machine) and writes
 * the version. It prints {@code <v> won <micros>} or {@code <v> lost <micros>} per version (lost: the store threw
 * FileAlreadyExistsException), micros being when the write started, in microseconds since the epoch.
 */
public class LogStoreRace {
  private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
  private static final long BARRIER_TIMEOUT_NANOS = 60_000_000_000L;

  public static void main(String[] args) throws Exception {
    String storeClass = args[0];
    java.nio.file.Path log = Paths.get(args[1]);
    java.nio.file.Path barrierFile = Paths.get(args[2]);
    int me = Integer.parseInt(args[3]);
    int versions = Integer.parseInt(args[4]);
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", "medallion.fs.NoForkLocalFileSystem");  // the sessions' file system (conf/spark.yaml)
    LogStore store = (LogStore) Class.forName(storeClass).getConstructor(Configuration.class).newInstance(conf);
    store.write(hadoopPath(log.resolve("warm-" + me)), List.of("warm").iterator(), false, conf);
    StringBuilder out = new StringBuilder();
    try (FileChannel channel = FileChannel.open(barrierFile, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      MappedByteBuffer barrier = channel.map(FileChannel.MapMode.READ_WRITE, 0, 16);
      for (int v = 0; v < versions; v++) {
        meet(barrier, me, v + 1);
        long started = nowMicros();
        Path file = hadoopPath(log.resolve(String.format("%020d.json", v)));
        try {
          store.write(file, commit(me, v).iterator(), false, conf);
          out.append(v).append(" won ").append(started).append('\n');
        } catch (FileAlreadyExistsException e) {
          out.append(v).append(" lost ").append(started).append('\n');
        }
      }
    }
    System.out.print(out);
  }

  /** Announce that this writer reached {@code round} and wait until the other one has too. */
  static void meet(MappedByteBuffer barrier, int me, long round) {
    LONGS.setVolatile(barrier, me * 8, round);
    long deadline = System.nanoTime() + BARRIER_TIMEOUT_NANOS;
    while ((long) LONGS.getVolatile(barrier, (1 - me) * 8) < round) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the other writer never reached version " + (round - 1));
      }
      Thread.onSpinWait();
    }
  }

  /** A commit's lines, about as long as a small append's (commitInfo and a few add actions). */
  static List<String> commit(int writer, int version) {
    List<String> lines = new ArrayList<>();
    lines.add("{\"commitInfo\":{\"writer\":" + writer + ",\"version\":" + version + "}}");
    for (int i = 0; i < 4; i++) {
      lines.add("{\"add\":{\"path\":\"part-" + writer + "-" + version + "-" + i + ".parquet\",\"stats\":\""
          + "x".repeat(200) + "\"}}");
    }
    return lines;
  }

  static Path hadoopPath(java.nio.file.Path path) {
    return new Path(path.toUri());
  }

  static long nowMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }
}

package medallion.fs;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system (with its .crc checksum files), except that permissions are set through
 * java.nio instead of a forked {@code chmod} process.
 *
 * <p>Without Hadoop's native library (libhadoop.so, not shipped with pyspark), {@link RawLocalFileSystem}
 * runs {@code chmod} in a child process for every file it creates with a permission: every Delta log entry,
 * every streaming checkpoint file, every Parquet file. One small pipeline update forked about 140 of them.
 * Everything else (reads, listing, renames, statuses) is Hadoop's own code.
 */
public class NoForkLocalFileSystem extends LocalFileSystem {

  public NoForkLocalFileSystem() {
    super(new Raw());
  }

  /**
   * Hadoop's listing, except for a path that no longer exists while a streaming file source builds a micro-batch
   * from the files it logged for it: then {@link MissingBatchFileException}. Spark's file index skips a missing
   * root path silently, so a file deleted between a batch's listing and its reading would count as ingested
   * without its data having been read; this stops the batch before anything is written, and the batch is read
   * again, whole, on the next start. The session setting {@code spark.sql.files.ignoreMissingFiles=true} keeps
   * Spark's behaviour (the file is skipped).
   */
  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    try {
      return super.listStatus(f);
    } catch (FileNotFoundException e) {
      if (buildingStreamingBatch() && !ignoreMissingFiles()) {
        throw new MissingBatchFileException(f.toString(), e);
      }
      throw e;
    }
  }

  /**
   * A file stream source's {@code getBatch} called to run a batch. Not its call on restart for the last committed
   * batch ({@code populateStartOffsets}), which only rebuilds that batch's plan: its files may since have been
   * archived by cleanSource.
   */
  private static boolean buildingStreamingBatch() {
    boolean[] seen = new boolean[3];  // getBatch, runBatch, populateStartOffsets
    StackWalker.getInstance().forEach(frame -> {
      String cls = frame.getClassName();
      String method = frame.getMethodName();
      if (cls.endsWith(".FileStreamSource") && method.equals("getBatch")) {
        seen[0] = true;
      } else if (cls.endsWith(".MicroBatchExecution")) {
        seen[1] |= method.contains("runBatch");
        seen[2] |= method.contains("populateStartOffsets");
      }
    });
    return seen[0] && seen[1] && !seen[2];
  }

  private static boolean ignoreMissingFiles() {
    scala.Option<org.apache.spark.sql.SparkSession> session =
        org.apache.spark.sql.SparkSession$.MODULE$.getActiveSession();
    return session.isDefined()
        && session.get().conf().get("spark.sql.files.ignoreMissingFiles", "false").equalsIgnoreCase("true");
  }

  /** A file logged for a streaming micro-batch that disappeared before the batch read it. */
  public static class MissingBatchFileException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String path;

    MissingBatchFileException(String path, FileNotFoundException cause) {
      super("File " + path + " does not exist (FileNotFoundException): it was listed for this streaming micro-batch "
          + "and disappeared before the batch read it", cause);
      this.path = path;
    }

    /** The file that disappeared (read by the framework's error classification, framework/autoloader/api.py). */
    public String getPath() {
      return path;
    }
  }

  /** The raw (checksum-less) layer with permissions set in-process. */
  public static class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      java.nio.file.Path path = pathToFile(p).toPath();
      try {
        Files.setPosixFilePermissions(path, toPosix(permission));
      } catch (UnsupportedOperationException e) {
        super.setPermission(p, permission);  // not a POSIX file system: Hadoop's way
      }
    }
  }

  static Set<PosixFilePermission> toPosix(FsPermission permission) {
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    add(out, permission.getUserAction(), PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_EXECUTE);
    add(out, permission.getGroupAction(), PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
        PosixFilePermission.GROUP_EXECUTE);
    add(out, permission.getOtherAction(), PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_EXECUTE);
    return out;
  }

  private static void add(Set<PosixFilePermission> out, FsAction action, PosixFilePermission read,
                          PosixFilePermission write, PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) {
      out.add(read);
    }
    if (action.implies(FsAction.WRITE)) {
      out.add(write);
    }
    if (action.implies(FsAction.EXECUTE)) {
      out.add(execute);
    }
  }
}

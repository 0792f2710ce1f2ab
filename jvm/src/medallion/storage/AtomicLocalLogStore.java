package medallion.storage;

import java.io.BufferedWriter;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URI;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.UUID;

import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * Delta's {@code LogStore} for local ({@code file:}) paths whose "create this log file if absent" holds across
 * processes, configured as {@code spark.delta.logStore.file.impl} in {@code conf/spark.yaml}.
 *
 * <p>Delta's {@code LocalLogStore} checks that a commit file is absent and then renames a temporary file onto it,
 * under a lock of its JVM only: two processes (or Spark and the framework's Python writer of
 * {@code framework/driver_delta.py}) can both be told they committed the same version, and one commit is lost.
 * Here a new file is a finished temporary file in the same directory, forced to disk, then hard-linked to its
 * final name: {@code link(2)} fails when the name exists, atomically, whoever created it. The Python writer puts
 * its commits in place the same way ({@code os.link}), so the two exclude each other, and Delta's conflict
 * detection then retries on the next version as it does between writers of one JVM.
 *
 * <p>Reading and listing are Hadoop's, as in {@code LocalLogStore} ({@link HadoopFileSystemLogStore}).
 */
public class AtomicLocalLogStore extends HadoopFileSystemLogStore {

  public AtomicLocalLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  /**
   * Writes {@code actions}, one per line. With {@code overwrite} false the file appears whole or not at all and
   * {@link FileAlreadyExistsException} says it existed; with {@code overwrite} true it replaces the file by an
   * atomic rename (readers see the old or the new file, never a part).
   */
  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
      throws IOException {
    java.nio.file.Path target = localPath(path, hadoopConf);
    java.nio.file.Path dir = target.getParent();
    if (dir == null || !Files.isDirectory(dir)) {
      throw new FileNotFoundException("No such file or directory: " + path.getParent());
    }
    java.nio.file.Path temp = dir.resolve("." + target.getFileName() + "." + UUID.randomUUID() + ".tmp");
    try {
      writeDurably(temp, actions);
      if (overwrite) {
        dropHadoopChecksum(target);
        Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } else {
        try {
          Files.createLink(target, temp);
        } catch (FileAlreadyExistsException e) {
          throw new FileAlreadyExistsException(path.toString());  // the name Delta gave, as its stores do
        }
      }
    } finally {
      Files.deleteIfExists(temp);  // after the link, the commit keeps the data; on failure, no litter
    }
  }

  /**
   * True, although files written by {@link #write} are never partial: Delta asks this to decide how to write what
   * does not go through the store, its Parquet checkpoints (a Spark job writes them with Hadoop's file system,
   * where a file being written is visible under its name). True makes it write them under a temporary name and
   * rename them, as with {@code LocalLogStore}; false would let a reader (Delta, or the framework's log reader,
   * {@code framework/delta_log.py}) meet half a checkpoint.
   */
  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
    return true;
  }

  /**
   * Forced to disk before it gets its name: a crash right after a commit must not leave the version's name on an
   * empty or partial file (a link, unlike a rename over an existing file, gives no ordering guarantee on ext4).
   */
  private static void writeDurably(java.nio.file.Path temp, Iterator<String> actions) throws IOException {
    try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
         Writer out = new BufferedWriter(new OutputStreamWriter(Channels.newOutputStream(channel),
             StandardCharsets.UTF_8))) {
      while (actions.hasNext()) {
        out.write(actions.next());
        out.write('\n');
      }
      out.flush();
      channel.force(true);
    }
  }

  /**
   * Hadoop's checksummed local file system (the session's, {@code medallion.fs.NoForkLocalFileSystem}) verifies a
   * file against its hidden {@code .<name>.crc} when there is one. Files written here have none, but one written
   * through Hadoop before (by {@code LocalLogStore}: {@code _last_checkpoint}) would no longer match the file that
   * replaces it; removed first, so that a reader sees the old file with its checksum or a file without one.
   */
  private static void dropHadoopChecksum(java.nio.file.Path target) throws IOException {
    Files.deleteIfExists(target.resolveSibling("." + target.getFileName() + ".crc"));
  }

  /**
   * The java.nio path of a Hadoop path on the local file system.
   *
   * @throws IOException the path's file system is not a local one (link and atomic rename are local file
   *     system operations: configure another LogStore for that scheme)
   */
  static java.nio.file.Path localPath(Path path, Configuration hadoopConf) throws IOException {
    FileSystem fs = path.getFileSystem(hadoopConf);
    URI uri = fs.makeQualified(path).toUri();
    if (!(fs instanceof LocalFileSystem || fs instanceof RawLocalFileSystem) || !"file".equals(uri.getScheme())) {
      throw new IOException(AtomicLocalLogStore.class.getName() + " writes Delta logs on the local file system "
          + "only (file: paths); " + path + " is on " + fs.getClass().getName() + ": set "
          + "spark.delta.logStore." + uri.getScheme() + ".impl to a LogStore for that storage");
    }
    return Paths.get(uri.getPath());
  }
}

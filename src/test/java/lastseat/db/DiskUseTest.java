package lastseat.db;

import lastseat.support.InProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real-parts tier (an H2 file): the file keeps about its rows while the database stays open. Every
 * commit is written before it returns, so H2 runs no housekeeping of its own; without {@link
 * H2Compaction} (and COMPRESS) the file kept about 220 KB per purchase, never given back, not even at
 * a clean close. Purchases go through the service's own paths ({@link DiskUse.Buyer}) as fast as one
 * thread can make them, the job at its shipped pace.
 */
class DiskUseTest {
    private static final int PURCHASES = 1000;
    private static final long KEPT_PER_PURCHASE = 4 * 1024;
    /** While purchases arrive as fast as one thread makes them, the job lags; bounded all the same. */
    private static final long RUNNING_PER_PURCHASE = 40 * 1024;
    private static final long SETTLE_NANOS = 10_000_000_000L;

    @TempDir
    Path dir;

    @Test
    void theFileKeepsAboutItsRowsAndGivesSpaceBackWhileTheDatabaseStaysOpen() throws Exception {
        Path file = dir.resolve("lastseat.mv.db");
        try (InProcess app = InProcess.onFile(dir.resolve("lastseat"), Map.of())) {
            DiskUse.Buyer buyer = new DiskUse.Buyer(app, PURCHASES);
            long peak = 0;
            for (int i = 0; i < PURCHASES; i++) {
                buyer.buy();
                peak = Math.max(peak, Files.size(file));
            }
            long kept = Files.size(file);
            long until = System.nanoTime() + SETTLE_NANOS;
            while (kept > KEPT_PER_PURCHASE * PURCHASES && System.nanoTime() < until) {
                Thread.sleep(100);
                kept = Files.size(file);
            }
            System.out.printf("%d purchases: at most %d B each while they were made, %d B each %.1f s later%n", PURCHASES,
                              peak / PURCHASES, kept / PURCHASES, (SETTLE_NANOS - (until - System.nanoTime())) / 1e9);
            assertThat(kept).as("the file, once the job has caught up, with the database open")
                    .isLessThanOrEqualTo(KEPT_PER_PURCHASE * PURCHASES)
                    .isLessThan(peak);
            assertThat(peak).as("the file's largest size while %d purchases were made", PURCHASES)
                    .isLessThanOrEqualTo(RUNNING_PER_PURCHASE * PURCHASES);
            assertThat(app.db.count("SELECT COUNT(*) FROM purchases WHERE state = 'CONFIRMED'")).isEqualTo(PURCHASES);
        }

        try (InProcess reopened = InProcess.onFile(dir.resolve("lastseat"), Map.of())) {
            assertThat(reopened.db.count("SELECT COUNT(*) FROM purchases WHERE state = 'CONFIRMED'"))
                    .as("every purchase, after the job was stopped by the close").isEqualTo(PURCHASES);
            assertThat(reopened.db.count("SELECT COUNT(*) FROM tickets")).isEqualTo(PURCHASES);
        }
    }
}

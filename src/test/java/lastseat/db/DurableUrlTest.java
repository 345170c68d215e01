package lastseat.db;

import lastseat.config.DbConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * The settings an H2 file is opened with: each commit in the file before it returns, findable after
 * kill -9, a purchase's statements parsed once per connection, and the page cache the configuration names.
 */
class DurableUrlTest {

    @Test
    void anH2FileIsOpenedWithCommitsWrittenAtOnceAndAppendedAtTheEnd() {
        assertThat(Database.durable("jdbc:h2:file:./data/lastseat"))
                .isEqualTo("jdbc:h2:async:./data/lastseat;WRITE_DELAY=0;REUSE_SPACE=FALSE;QUERY_CACHE_SIZE=128;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void aSettingNamedInTheUrlIsLeftAsItIs() {
        assertThat(Database.durable("jdbc:h2:file:/tmp/x;reuse_space=TRUE;WRITE_DELAY=100"))
                .isEqualTo("jdbc:h2:async:/tmp/x;reuse_space=TRUE;WRITE_DELAY=100;QUERY_CACHE_SIZE=128;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void aPathWithoutSchemeIsAFileToH2AndGetsTheSameSettings() {
        assertThat(Database.durable("jdbc:h2:./data/x")).isEqualTo("jdbc:h2:async:./data/x;WRITE_DELAY=0;REUSE_SPACE=FALSE;QUERY_CACHE_SIZE=128;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:h2:~/x")).isEqualTo("jdbc:h2:async:~/x;WRITE_DELAY=0;REUSE_SPACE=FALSE;QUERY_CACHE_SIZE=128;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:h2:C:/data/x")).isEqualTo("jdbc:h2:async:C:/data/x;WRITE_DELAY=0;REUSE_SPACE=FALSE;QUERY_CACHE_SIZE=128;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void anotherSchemeIsLeftToItself() {
        assertThat(Database.durable("jdbc:h2:tcp://db:9092/x")).isEqualTo("jdbc:h2:tcp://db:9092/x;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:h2:nio:/x;WRITE_DELAY=0")).isEqualTo("jdbc:h2:nio:/x;WRITE_DELAY=0;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void anH2FileKeepsAPurchasesWorthOfParsedStatementsAndTheDatabaseSaysSo(@TempDir Path dir) {
        assertThat(settingOfAFileOpened(dir, 16, "QUERY_CACHE_SIZE")).containsExactly(Integer.toString(Database.H2_PARSED_STATEMENTS));
        assertThat(Database.durable("jdbc:h2:file:/tmp/x;query_cache_size=4")).as("a size the URL sets is kept").isEqualTo(
                "jdbc:h2:async:/tmp/x;query_cache_size=4;WRITE_DELAY=0;REUSE_SPACE=FALSE;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void anH2FileGetsThePageCacheItsConfigurationNamesAndTheDatabaseSaysSo(@TempDir Path dir) {
        assertThat(settingOfAFileOpened(dir, 48, "info.CACHE_MAX_SIZE")).as("in MB; H2's own default is 16").containsExactly("48");
        String durable = Database.durable("jdbc:h2:file:/tmp/x");
        assertThat(Database.cached(durable, 48)).as("QUERY_CACHE_SIZE is not taken for it").isEqualTo(durable + ";CACHE_SIZE=49152");
        assertThat(Database.cached(Database.durable("jdbc:h2:file:/tmp/x;cache_size=1024"), 48)).as("a size the URL sets is kept")
                .isEqualTo(Database.durable("jdbc:h2:file:/tmp/x;cache_size=1024"));
        assertThat(Database.cached(Database.durable("jdbc:h2:mem:t"), 48)).as("no file, no page cache").isEqualTo(Database.durable("jdbc:h2:mem:t"));
        assertThat(Database.cached("jdbc:postgresql://127.0.0.1:5432/test", 48)).isEqualTo("jdbc:postgresql://127.0.0.1:5432/test");
    }

    @Test
    void aPageCacheThatWouldTakeMoreThanHalfTheHeapStopsStartUpNamingTheKey() {
        long heap = 512L * 1024 * 1024;
        Database.fitsTheHeap(204, heap);   // 255 MB with the tables of contents: under half

        assertThatThrownBy(() -> Database.fitsTheHeap(205, heap))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration db.h2-cache-megabytes ")
                .hasMessageContaining("512 MB");
    }

    @Test
    void anH2FileWhosePageCacheTheHeapCannotHoldIsNotOpened(@TempDir Path dir) {
        assumeThat(Runtime.getRuntime().maxMemory()).as("a heap under twice 16,384 MB and its quarter").isLessThan(16_384L * 1024 * 1024 * 5 / 2);

        assertThatThrownBy(() -> Database.open(new DbConfig("jdbc:h2:file:" + dir.resolve("big"), "sa", "", 2,
                                                            Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16_384)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration db.h2-cache-megabytes ");
        assertThat(dir.resolve("big.mv.db")).as("refused before H2 made the file").doesNotExist();
    }

    @Test
    void inMemoryAndPostgresUrlsGetNoFileSettings() {
        assertThat(Database.durable("jdbc:h2:mem:t")).isEqualTo("jdbc:h2:mem:t;QUERY_CACHE_SIZE=128;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:postgresql://127.0.0.1:5432/test")).isEqualTo("jdbc:postgresql://127.0.0.1:5432/test");
    }

    /** What {@code INFORMATION_SCHEMA.SETTINGS} says of {@code name} for an H2 file opened through {@link Database#open}. */
    private static List<String> settingOfAFileOpened(Path dir, int cacheMegabytes, String name) {
        try (Database db = Database.open(new DbConfig("jdbc:h2:file:" + dir.resolve("lastseat"), "sa", "", 2,
                                                      Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), cacheMegabytes))) {
            return db.read(c -> Sql.list(c, "SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = ?",
                                         rs -> rs.getString(1), name));
        }
    }
}

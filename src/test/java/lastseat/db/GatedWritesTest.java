package lastseat.db;

import lastseat.config.DbConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Writes to an H2 file pass through {@link H2CommitGate}: one in auto-commit mode, which would commit
 * outside it, is refused and changes nothing; one through {@link Database#write} or
 * {@link Database#inTransaction} is in the file when it returns — a copy taken then, as a kill would
 * leave it, holds it.
 */
class GatedWritesTest {
    @TempDir
    Path dir;
    private Database db;

    @BeforeEach
    void open() {
        db = Database.open(config(dir.resolve("live")));
        db.inTransaction(c -> Sql.update(c, "CREATE TABLE notes (id INT PRIMARY KEY)"));
    }

    @AfterEach
    void close() {
        db.close();
    }

    @Test
    void aWriteInAutoCommitIsRefusedAndChangesNothing() {
        assertThatThrownBy(() -> db.read(c -> Sql.update(c, "INSERT INTO notes (id) VALUES (1)")))
                .isInstanceOf(DatabaseException.class).hasMessageContaining("auto-commit");
        assertThatThrownBy(() -> db.read(c -> Sql.update(c, "  delete FROM notes")))
                .isInstanceOf(DatabaseException.class).hasMessageContaining("auto-commit");

        assertThat(ids(db)).isEmpty();
        List<Integer> counted = db.read(c -> Sql.list(c, "SELECT COUNT(*) FROM notes", rs -> rs.getInt(1)));
        assertThat(counted).as("a read is a read").containsExactly(0);
        assertThat(db.activeConnections()).as("every connection back in the pool").isZero();
    }

    @Test
    void aWriteAndATransactionAreInTheFileWhenTheyReturn() throws Exception {
        int first = db.write(c -> Sql.update(c, "INSERT INTO notes (id) VALUES (1)"));
        db.inTransaction(c -> Sql.update(c, "INSERT INTO notes (id) VALUES (2)"));
        boolean taken = db.write(c -> {
            try {
                Sql.update(c, "INSERT INTO notes (id) VALUES (1)");
                return false;
            } catch (java.sql.SQLException e) {
                // As in auto-commit: the failed statement undid itself, the next one runs.
                return Database.isUniqueViolation(e) && Sql.update(c, "INSERT INTO notes (id) VALUES (3)") == 1;
            }
        });

        Path copy = Files.createDirectories(dir.resolve("copy"));
        Files.copy(dir.resolve("live").resolve("gated.mv.db"), copy.resolve("gated.mv.db"));
        assertThat(first).isEqualTo(1);
        assertThat(taken).as("the key taken, then the next statement").isTrue();
        try (Database copied = Database.open(config(copy))) {
            assertThat(ids(copied)).as("the file as a kill would leave it now").containsExactly(1, 2, 3);
        }
        assertThat(db.activeConnections()).as("every connection back in the pool").isZero();
    }

    @Test
    void h2CollectsEveryUndoLogAfterEveryOtherMap() throws Exception {
        // Three transactions open at once: three slots, each with an undo log (on a new file, older maps
        // than the table, which H2 alone would collect first).
        db.inTransaction(a -> {
            Sql.update(a, "INSERT INTO notes (id) VALUES (1)");
            return db.inTransaction(b -> {
                Sql.update(b, "INSERT INTO notes (id) VALUES (2)");
                return db.inTransaction(c -> Sql.update(c, "INSERT INTO notes (id) VALUES (3)"));
            });
        });

        List<String> collected = db.read(GatedWritesTest::collectionOrder);

        int firstUndoLog = java.util.stream.IntStream.range(0, collected.size())
                .filter(i -> collected.get(i).startsWith("undoLog")).findFirst().orElseThrow();
        assertThat(collected.subList(firstUndoLog, collected.size())).as("the order H2 collects a chunk in: " + collected)
                .hasSizeGreaterThanOrEqualTo(3).allSatisfy(name -> assertThat(name).startsWith("undoLog"));
        assertThat(collected.subList(0, firstUndoLog)).as("the tables and indexes first").anySatisfy(name -> assertThat(name).startsWith("table."));
        assertThat(ids(db)).containsExactly(1, 2, 3);
        assertThat(db.activeConnections()).as("every connection back in the pool").isZero();
    }

    /** The names of the file's open maps, in the order H2 iterates its registry of them to collect a chunk. */
    @SuppressWarnings("unchecked")
    private static List<String> collectionOrder(java.sql.Connection c) throws java.sql.SQLException {
        org.h2.mvstore.MVStore store = ((org.h2.engine.SessionLocal) c.unwrap(org.h2.jdbc.JdbcConnection.class).getSession())
                .getDatabase().getStore().getMvStore();
        try {
            java.lang.reflect.Field maps = org.h2.mvstore.MVStore.class.getDeclaredField("maps");
            maps.setAccessible(true);
            List<String> names = new java.util.ArrayList<>();
            for (org.h2.mvstore.MVMap<?, ?> map : ((java.util.Map<?, org.h2.mvstore.MVMap<?, ?>>) maps.get(store)).values()) {
                names.add(store.getMapName(map.getId()));
            }
            return names;
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("H2's registry of open maps (MVStore.maps) is not where it was", e);
        }
    }

    private static List<Integer> ids(Database db) {
        return db.read(c -> Sql.list(c, "SELECT id FROM notes ORDER BY id", rs -> rs.getInt(1)));
    }

    private static DbConfig config(Path dir) {
        return new DbConfig("jdbc:h2:file:" + dir.resolve("gated").toAbsolutePath(), "sa", "", 4,
                            Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16);
    }
}

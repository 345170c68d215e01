package lastseat.db;

import lastseat.config.DbConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link Database#inTransaction} commits all of the work or none of it, whatever ends the work: a
 * {@link java.sql.SQLException}, a runtime failure, or an {@link Error} such as running out of
 * memory. The hazard: restoring auto-commit on a connection whose transaction is still open commits
 * it, half done.
 */
@Tag("fast")
class TransactionTest {
    private Database db;

    @BeforeEach
    void open() {
        db = Database.open(new DbConfig("jdbc:h2:mem:tx-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1", "sa", "", 2,
                                        Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16));
        db.inTransaction(c -> Sql.update(c, "CREATE TABLE halves (id INT PRIMARY KEY)"));
    }

    @AfterEach
    void close() {
        assertThat(db.activeConnections()).as("every connection came back").isZero();
        db.close();
    }

    @Test
    void anErrorHalfwayRollsBackTheFirstHalfInsteadOfCommittingIt() {
        assertThatThrownBy(() -> db.inTransaction(c -> {
            Sql.update(c, "INSERT INTO halves VALUES (1)");
            throw new OutOfMemoryError("injected halfway through the transaction");
        })).isInstanceOf(OutOfMemoryError.class);

        assertThat(rows()).as("the first half was not committed").isZero();
        assertThat(db.read(c -> (Boolean) c.getAutoCommit()).booleanValue()).as("the pooled connection is back in auto-commit").isTrue();
    }

    @Test
    void aRuntimeFailureHalfwayRollsBackAndTheFailureIsWhatTheCallerSees() {
        assertThatThrownBy(() -> db.inTransaction(c -> {
            Sql.update(c, "INSERT INTO halves VALUES (1)");
            throw new IllegalStateException("injected");
        })).isInstanceOf(IllegalStateException.class).hasMessage("injected");

        assertThat(rows()).isZero();
    }

    @Test
    void workThatEndsCommitsAllOfIt() {
        db.inTransaction(c -> Sql.update(c, "INSERT INTO halves VALUES (1)") + Sql.update(c, "INSERT INTO halves VALUES (2)"));

        assertThat(rows()).isEqualTo(2);
    }

    private long rows() {
        return db.read(c -> Sql.list(c, "SELECT COUNT(*) FROM halves", rs -> rs.getLong(1)).getFirst());
    }
}

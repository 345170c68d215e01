package lastseat;

import lastseat.config.DbConfig;
import lastseat.config.WarmupConfig;
import lastseat.db.Database;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The database of the warm-up's copy ({@link Warmup}). On PostgreSQL with {@code
 * warm-up.postgres-schema}: a schema of its own in {@code db.url}'s database, named {@code
 * lastseat_warm_up_<seconds>_<random>} by the database's clock, so that the copy runs the PostgreSQL
 * driver's code the first buyers will run. Otherwise: an in-memory H2 of its own, dropped with the copy.
 * {@link #close} drops the schema with everything in it. A schema left by a process killed while it
 * warmed up is dropped by a later warm-up once older than {@link #STALE}, never sooner: two instances
 * warming up together never drop each other's.
 *
 * <p>Hazard: the copy reaches the schema, not the real tables, only through its URL: {@code db.url}
 * with {@code currentSchema} set to the schema, so the copy's search path holds that schema alone. A
 * {@code db.url} that already sets {@code currentSchema} or {@code options} (a search path of its
 * own) is not given a schema — the copy uses H2 — rather than trusting which of two settings wins.
 */
final class WarmupDatabase implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(WarmupDatabase.class.getName());
    /** Longer than any warm-up: its bound is at most a minute, the copy's start and stop a few seconds. */
    private static final Duration STALE = Duration.ofMinutes(10);
    private static final String PREFIX = "lastseat_warm_up_";
    private static final Pattern NAME = Pattern.compile(PREFIX + "(\\d+)_[0-9a-f]{12}");
    private static final Pattern SEARCH_PATH = Pattern.compile("[?&](currentschema|options)=");

    private final String url;
    private final String user;
    private final String password;
    private final Optional<String> schema;
    private final DbConfig real;
    private final Duration bound;

    private WarmupDatabase(String url, String user, String password, Optional<String> schema, DbConfig real, Duration bound) {
        this.url = url;
        this.user = user;
        this.password = password;
        this.schema = schema;
        this.real = real;
        this.bound = bound;
    }

    /**
     * The copy's database for a process on {@code real}: a new schema when that is possible, else an
     * in-memory H2, and a warning that says why when a schema was wanted. Each statement here waits at
     * most {@code warm-up.max-time}.
     */
    static WarmupDatabase of(DbConfig real, WarmupConfig warmUp) {
        Duration bound = warmUp.maxTime();
        if (!warmUp.postgresSchema() || !Database.isPostgres(real.url())) {
            return inMemory(real, bound);
        }
        if (SEARCH_PATH.matcher(real.url().toLowerCase(Locale.ROOT)).find()) {
            LOG.warning("warm-up: db.url sets currentSchema or options itself; the throwaway copy uses an in-memory H2");
            return inMemory(real, bound);
        }
        try (Connection c = connect(real, bound); Statement s = c.createStatement()) {
            s.setQueryTimeout(seconds(bound));
            long now = databaseSeconds(s);
            dropStale(s, now);
            String schema = PREFIX + now + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
            s.execute("CREATE SCHEMA " + schema);
            String url = real.url() + (real.url().contains("?") ? "&" : "?") + "currentSchema=" + schema;
            return new WarmupDatabase(url, real.user(), real.password(), Optional.of(schema), real, bound);
        } catch (SQLException e) {
            LOG.warning("warm-up: could not create a schema of its own in db.url's database (" + e.getMessage()
                        + "); the throwaway copy uses an in-memory H2 instead, and the PostgreSQL driver's code stays cold");
            return inMemory(real, bound);
        }
    }

    private static WarmupDatabase inMemory(DbConfig real, Duration bound) {
        return new WarmupDatabase("jdbc:h2:mem:lastseat-warm-up-" + UUID.randomUUID(), "sa", "", Optional.empty(), real, bound);
    }

    /** The copy's {@code db.url}. */
    String url() {
        return url;
    }

    String user() {
        return user;
    }

    String password() {
        return password;
    }

    @Override
    public String toString() {
        return schema.map(name -> "schema " + name + " of db.url's database").orElse("an in-memory H2");
    }

    /** Drops the schema with everything in it; a failure is logged (a later warm-up drops it when stale). */
    @Override
    public void close() {
        if (schema.isEmpty()) {
            return;
        }
        try (Connection c = connect(real, bound); Statement s = c.createStatement()) {
            s.setQueryTimeout(seconds(bound));
            s.execute("DROP SCHEMA IF EXISTS " + schema.get() + " CASCADE");
        } catch (SQLException e) {
            LOG.log(Level.WARNING, "warm-up: could not drop its schema " + schema.get() + "; a later warm-up drops it after "
                                   + STALE.toMinutes() + " minutes", e);
        }
    }

    /** Schemas of earlier warm-ups older than {@link #STALE} by the database's clock: left by a process killed while warming up. */
    private static void dropStale(Statement s, long now) throws SQLException {
        List<String> stale = new ArrayList<>();
        try (ResultSet names = s.executeQuery("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lastseat\\_warm\\_up\\_%'")) {
            while (names.next()) {
                Matcher name = NAME.matcher(names.getString(1));
                if (name.matches() && now - Long.parseLong(name.group(1)) > STALE.toSeconds()) {
                    stale.add(name.group());
                }
            }
        }
        for (String name : stale) {
            try {
                s.execute("DROP SCHEMA IF EXISTS " + name + " CASCADE");
                LOG.info("warm-up: dropped " + name + ", left by an earlier warm-up that did not finish");
            } catch (SQLException e) {
                // Another user's, say: it stays, and this warm-up goes on.
                LOG.warning("warm-up: could not drop the stale " + name + ": " + e.getMessage());
            }
        }
    }

    private static long databaseSeconds(Statement s) throws SQLException {
        try (ResultSet now = s.executeQuery("SELECT CAST(FLOOR(EXTRACT(EPOCH FROM CLOCK_TIMESTAMP())) AS BIGINT)")) {
            now.next();
            return now.getLong(1);
        }
    }

    private static Connection connect(DbConfig real, Duration bound) throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", real.user());
        properties.setProperty("password", real.password());
        properties.setProperty("loginTimeout", String.valueOf(seconds(bound)));
        properties.setProperty("socketTimeout", String.valueOf(seconds(bound)));
        Connection c = DriverManager.getConnection(real.url(), properties);
        c.setAutoCommit(true);
        return c;
    }

    private static int seconds(Duration bound) {
        return (int) Math.max(1, bound.toSeconds());
    }
}

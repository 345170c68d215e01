package lastseat.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/**
 * One statement on a given connection (so it joins the caller's transaction), with bound arguments.
 * An {@link Instant} is bound as a UTC {@code TIMESTAMP WITH TIME ZONE}, and {@link #instant} reads
 * one back, so callers speak in instants from their clock and never convert.
 */
public final class Sql {
    private Sql() {
    }

    @FunctionalInterface
    public interface Row<T> {
        T map(ResultSet rs) throws SQLException;
    }

    public static <T> List<T> list(Connection c, String sql, Row<T> row, Object... args) throws SQLException {
        try (PreparedStatement ps = prepared(c, sql, args); ResultSet rs = ps.executeQuery()) {
            List<T> rows = new ArrayList<>();
            while (rs.next()) {
                rows.add(row.map(rs));
            }
            return rows;
        }
    }

    /** The {@code TIMESTAMP WITH TIME ZONE} in {@code column} as an instant, or null. */
    public static Instant instant(ResultSet rs, int column) throws SQLException {
        OffsetDateTime value = rs.getObject(column, OffsetDateTime.class);
        return value == null ? null : value.toInstant();
    }

    /** Runs an INSERT, UPDATE or DELETE and returns how many rows it touched. */
    public static int update(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = prepared(c, sql, args)) {
            return ps.executeUpdate();
        }
    }

    /** Binds one parameter as {@link #update} and the queries do (an {@link Instant} as UTC). */
    public static void set(PreparedStatement ps, int index, Object value) throws SQLException {
        ps.setObject(index, value instanceof Instant instant ? instant.atOffset(ZoneOffset.UTC) : value);
    }

    private static PreparedStatement prepared(Connection c, String sql, Object... args) throws SQLException {
        PreparedStatement ps = c.prepareStatement(sql);
        try {
            for (int i = 0; i < args.length; i++) {
                set(ps, i + 1, args[i]);
            }
            return ps;
        } catch (SQLException e) {
            ps.close();
            throw e;
        }
    }
}

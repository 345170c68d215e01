package lastseat.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** One statement on a given connection (so it joins the caller's transaction), with bound arguments. */
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

    /** Runs an INSERT, UPDATE or DELETE and returns how many rows it touched. */
    public static int update(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = prepared(c, sql, args)) {
            return ps.executeUpdate();
        }
    }

    private static PreparedStatement prepared(Connection c, String sql, Object... args) throws SQLException {
        PreparedStatement ps = c.prepareStatement(sql);
        try {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            return ps;
        } catch (SQLException e) {
            ps.close();
            throw e;
        }
    }
}

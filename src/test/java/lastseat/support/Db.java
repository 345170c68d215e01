package lastseat.support;

import lastseat.db.Database;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;

/** Reads the database directly, to check what the HTTP answers claim. */
public final class Db {
    private final Database db;

    Db(Database db) {
        this.db = db;
    }

    public long count(String sql, Object... args) {
        return db.read(c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                for (int i = 0; i < args.length; i++) {
                    ps.setObject(i + 1, args[i]);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    public List<String> strings(String sql, Object... args) {
        return db.read(c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                for (int i = 0; i < args.length; i++) {
                    ps.setObject(i + 1, args[i]);
                }
                List<String> values = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        values.add(rs.getString(1));
                    }
                }
                return values;
            }
        });
    }

    public String purchaseState(String purchaseId) {
        List<String> states = strings("SELECT state FROM purchases WHERE id = ?", purchaseId);
        return states.isEmpty() ? null : states.getFirst();
    }
}

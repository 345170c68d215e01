package lastseat.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.UUID;

/** A fresh PostgreSQL database at 127.0.0.1:5432 for one benchmark run, or null when none answers. */
final class PostgresBench {
    private static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/";

    private PostgresBench() {
    }

    static String freshDatabase() {
        String name = "lastseat_bench_" + UUID.randomUUID().toString().substring(0, 8);
        try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "")) {
            c.createStatement().execute("CREATE DATABASE " + name);
            return SERVER + name;
        } catch (SQLException e) {
            System.out.println("   PostgreSQL is not reachable at 127.0.0.1:5432 (" + e.getMessage() + "); its row is left out");
            return null;
        }
    }

    static void drop(String url) {
        String name = url.substring(url.lastIndexOf('/') + 1);
        try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "")) {
            c.createStatement().execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        } catch (SQLException e) {
            System.out.println("   could not drop " + name + ": " + e.getMessage());
        }
    }
}

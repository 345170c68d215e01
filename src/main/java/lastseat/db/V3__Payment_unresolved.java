package lastseat.db;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;

/**
 * Schema version 3, on H2 and PostgreSQL alike: the state PAYMENT_UNRESOLVED (a payment unknown past
 * {@code reconcile.give-up-after}, shown to an operator); a claim token on every Idempotency-Key
 * claim, so that only the request holding the claim may complete or let go of it; and when an
 * operator last retried a dead outbox row (its give-up time counts from then).
 *
 * <p>In Java because V1 declared the state's CHECK without a name, and each database names it its
 * own way: the migration finds it by what it checks, drops it, and adds a named one.
 */
final class V3__Payment_unresolved extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws SQLException {
        Connection c = context.getConnection();
        Sql.update(c, "ALTER TABLE idempotency_keys ADD COLUMN claim_token VARCHAR(36)");
        Sql.update(c, "ALTER TABLE outbox ADD COLUMN retried_at TIMESTAMP WITH TIME ZONE");
        List<String> checks = Sql.list(c, "SELECT tc.constraint_name FROM information_schema.table_constraints tc "
                                          + "JOIN information_schema.check_constraints cc ON cc.constraint_name = tc.constraint_name "
                                          + "AND cc.constraint_schema = tc.constraint_schema "
                                          + "WHERE UPPER(tc.table_name) = 'PURCHASES' AND tc.table_schema = CURRENT_SCHEMA "
                                          + "AND cc.check_clause LIKE '%PAYMENT_UNKNOWN%'", rs -> rs.getString(1));
        if (checks.size() != 1) {
            throw new SQLException("expected one CHECK on purchases.state, found " + checks);
        }
        Sql.update(c, "ALTER TABLE purchases DROP CONSTRAINT \"" + checks.getFirst().replace("\"", "\"\"") + "\"");
        Sql.update(c, "ALTER TABLE purchases ADD CONSTRAINT purchases_state_known CHECK (state IN ('HELD', 'PAYING', "
                      + "'PAYMENT_UNKNOWN', 'PAYMENT_UNRESOLVED', 'CONFIRMED', 'RELEASED', 'EXPIRED', 'REFUNDED'))");
    }
}

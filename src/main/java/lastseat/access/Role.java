package lastseat.access;

import java.util.Locale;

/** What a key may do: an operator runs the shop, a client (a ticket shop's backend) buys for its buyers. */
public enum Role {
    OPERATOR, CLIENT;

    String column() {
        return name().toLowerCase(Locale.ROOT);
    }

    static Role of(String column) {
        return valueOf(column.toUpperCase(Locale.ROOT));
    }
}

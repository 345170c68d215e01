package lastseat.checks;

import java.math.BigDecimal;

/** What the checks found: the buyer may pay, and the tax on the amount. */
public record Quote(BigDecimal tax, String currency) {
}

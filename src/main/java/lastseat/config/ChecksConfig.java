package lastseat.config;

/**
 * The {@code checks} section: where the fraud and tax services answer, under {@code outside.base-url}.
 * (The Retry-After told to a buyer when one is down is {@code purchase.retry-after}.)
 *
 * @param fraudPath {@code checks.fraud-path}
 * @param taxPath   {@code checks.tax-path}
 */
public record ChecksConfig(String fraudPath, String taxPath) {

    public ChecksConfig {
        Check.path("checks.fraud-path", fraudPath);
        Check.path("checks.tax-path", taxPath);
    }

    static ChecksConfig read(Reader keys) {
        return new ChecksConfig(keys.string("checks.fraud-path"), keys.string("checks.tax-path"));
    }
}

package lastseat.testkit;

import com.github.tomakehurst.wiremock.admin.Router;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.extension.AdminApiExtension;
import com.github.tomakehurst.wiremock.http.RequestMethod;
import com.github.tomakehurst.wiremock.http.ResponseDefinition;

import java.util.stream.Collectors;

/**
 * {@code GET /__admin/ledger}: the payments the provider has processed ({@code payments}, each with
 * its status, captured or failed, and {@code processedAt} in epoch millis), the captured ones alone
 * ({@code captures}: what a drill counts as charges), the refunds (each naming its {@code paymentId},
 * with {@code recordedAt}) and emails the stubs received, and the most payment calls served at once.
 * {@code DELETE /__admin/ledger} empties it. For drills that run WireMock in its own process.
 */
public final class LedgerAdmin implements AdminApiExtension {
    @Override
    public String getName() {
        return "ledger-admin";
    }

    @Override
    public void contributeAdminApiRoutes(Router router) {
        router.add(RequestMethod.GET, "/ledger", (admin, event, params) -> new ResponseDefinitionBuilder()
                        .withStatus(200).withHeader("Content-Type", "application/json").withBody(render()).build());
        router.add(RequestMethod.DELETE, "/ledger", (admin, event, params) -> {
            Ledger.clear();
            InFlight.reset();
            return ResponseDefinition.noContent();
        });
    }

    private static String render() {
        return "{\"payments\":[" + Ledger.payments().stream().map(Ledger::adminJson).collect(Collectors.joining(","))
               + "],\"captures\":[" + Ledger.captures().stream().map(Ledger::adminJson).collect(Collectors.joining(","))
               + "],\"refunds\":[" + Ledger.refunds().stream().map(Ledger::adminJson).collect(Collectors.joining(","))
               + "],\"emails\":[" + Ledger.emails().stream()
                       .map(d -> "{\"key\":\"" + d.key() + "\",\"times\":" + d.times() + "}").collect(Collectors.joining(","))
               + "],\"paymentsInFlight\":" + InFlight.current() + ",\"maxPaymentsInFlight\":" + InFlight.max() + "}";
    }
}

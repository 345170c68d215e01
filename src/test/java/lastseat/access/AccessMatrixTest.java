package lastseat.access;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Who may call what, on a real server: every route of both ports with no key, a malformed key, an
 * unknown key, a client's key and the operator's key. A refusal is 401 (with {@code WWW-Authenticate:
 * Bearer}) or 403, as problem+json, and changes nothing; a caller the route takes is never refused for
 * who it is. The bodies sent are invalid on purpose, so that an allowed caller gets a 4xx about its
 * input and the database stays as it was, which the test checks at the end.
 */
class AccessMatrixTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    private static final String UNKNOWN_KEY = "ls_00000000000000ff_000000000000000000000000000000ff";

    private static String event;
    private static String purchase;

    @BeforeAll
    static void aPurchaseToAskAbout() {
        event = app.newEvent("A1");
        Answer bought = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        assertThat(bought.status()).as(bought.toString()).isEqualTo(201);
        purchase = bought.json().path("id").asText();
    }

    enum Port { PUBLIC, ADMIN }

    enum Need { ANYONE, CLIENT, CLIENT_OR_OPERATOR, OPERATOR }

    record Route(Port port, String method, String path, String body, Need need) {
        @Override
        public String toString() {
            return method + " " + path + " on the " + port.name().toLowerCase() + " port";
        }
    }

    private static List<Route> routes() {
        return List.of(
                new Route(Port.PUBLIC, "GET", "/events/" + event, null, Need.ANYONE),
                new Route(Port.PUBLIC, "POST", "/events", "{}", Need.OPERATOR),
                new Route(Port.PUBLIC, "POST", "/purchases", "{}", Need.CLIENT),
                new Route(Port.PUBLIC, "GET", "/purchases?state=CONFIRMED", null, Need.CLIENT_OR_OPERATOR),
                new Route(Port.PUBLIC, "GET", "/purchases/" + purchase, null, Need.CLIENT_OR_OPERATOR),
                new Route(Port.PUBLIC, "POST", "/purchases/" + UUID.randomUUID() + "/cancel", "", Need.CLIENT),
                new Route(Port.PUBLIC, "GET", "/openapi", null, Need.ANYONE),
                new Route(Port.ADMIN, "GET", "/observe/health", null, Need.ANYONE),
                new Route(Port.ADMIN, "GET", "/observe/metrics", null, Need.OPERATOR),
                new Route(Port.ADMIN, "GET", "/outbox?state=dead", null, Need.OPERATOR),
                new Route(Port.ADMIN, "POST", "/outbox/" + UUID.randomUUID() + "/retry", "", Need.OPERATOR),
                new Route(Port.ADMIN, "GET", "/drills/invariants?event=" + event, null, Need.OPERATOR),
                new Route(Port.ADMIN, "GET", "/admin/clients", null, Need.OPERATOR),
                new Route(Port.ADMIN, "POST", "/admin/clients", "{\"name\":\"Not A Name\"}", Need.OPERATOR),
                new Route(Port.ADMIN, "PATCH", "/admin/clients/nobody", "{\"maxInFlight\":1}", Need.OPERATOR),
                new Route(Port.ADMIN, "DELETE", "/admin/clients/nobody", null, Need.OPERATOR));
    }

    @Test
    void everyRouteRefusesTheCallersItDoesNotTakeAndLetsThroughTheOnesItDoes() {
        Instance at = app.client().instance();
        long purchasesBefore = app.db().count("SELECT COUNT(*) FROM purchases");
        long eventsBefore = app.db().count("SELECT COUNT(*) FROM events");
        long keysBefore = app.db().count("SELECT COUNT(*) FROM api_keys");
        List<String> wrong = new ArrayList<>();

        for (Route route : routes()) {
            URI port = route.port() == Port.PUBLIC ? at.api() : at.admin();
            Answer none = app.client().send(route.method(), port, route.path(), null, "k-" + UUID.randomUUID(), route.body());
            Answer malformed = app.client().send(route.method(), port, route.path(), "not-a-key", "k-" + UUID.randomUUID(), route.body());
            Answer unknown = app.client().send(route.method(), port, route.path(), UNKNOWN_KEY, "k-" + UUID.randomUUID(), route.body());
            Answer client = app.client().send(route.method(), port, route.path(), at.clientKey(), "k-" + UUID.randomUUID(), route.body());
            Answer operator = app.client().send(route.method(), port, route.path(), at.operatorKey(), "k-" + UUID.randomUUID(), route.body());

            for (Answer keyless : List.of(none, malformed, unknown)) {
                if (route.need() == Need.ANYONE) {
                    check(wrong, route, "without a valid key", keyless, keyless.status() < 400);
                } else {
                    check(wrong, route, "without a valid key", keyless, keyless.status() == 401
                            && String.valueOf(keyless.header("WWW-Authenticate")).startsWith("Bearer")
                            && "application/problem+json".equals(keyless.header("Content-Type")));
                }
            }
            boolean clientTaken = route.need() != Need.OPERATOR;
            boolean operatorTaken = route.need() != Need.CLIENT;
            check(wrong, route, "with a client key", client, clientTaken ? notRefused(client) : forbidden(client));
            check(wrong, route, "with the operator key", operator, operatorTaken ? notRefused(operator) : forbidden(operator));
        }

        assertThat(wrong).as("answers that break the table").isEmpty();
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases")).as("no purchase made").isEqualTo(purchasesBefore);
        assertThat(app.db().count("SELECT COUNT(*) FROM events")).as("no event made").isEqualTo(eventsBefore);
        assertThat(app.db().count("SELECT COUNT(*) FROM api_keys")).as("no key made").isEqualTo(keysBefore);
        Invariants.seatsAreConsistent(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void theOperatorsRoutesAreNotServedOnThePublicPortNorThePublicRoutesOnTheAdminPort() {
        Instance at = app.client().instance();
        List<String> wrong = new ArrayList<>();
        for (String path : List.of("/outbox?state=dead", "/observe/metrics", "/observe/health", "/admin/clients",
                                   "/drills/invariants?event=" + event)) {
            Answer answer = app.client().send("GET", at.api(), path, at.operatorKey(), null, null);
            if (answer.status() != 404) {
                wrong.add("GET " + path + " on the public port: " + answer.status());
            }
        }
        for (String path : List.of("/events/" + event, "/purchases/" + purchase, "/purchases?state=CONFIRMED", "/openapi")) {
            Answer answer = app.client().send("GET", at.admin(), path, at.operatorKey(), null, null);
            if (answer.status() != 404) {
                wrong.add("GET " + path + " on the admin port: " + answer.status());
            }
        }
        assertThat(wrong).isEmpty();
        Invariants.resourcesCameBack(app);
    }

    private static boolean notRefused(Answer answer) {
        return answer.status() != 401 && answer.status() != 403 && answer.status() < 500;
    }

    private static boolean forbidden(Answer answer) {
        return answer.status() == 403 && "application/problem+json".equals(answer.header("Content-Type"))
               && answer.json().path("type").asText().equals("urn:lastseat:problem:forbidden");
    }

    private static void check(List<String> wrong, Route route, String who, Answer answer, boolean ok) {
        if (!ok) {
            wrong.add(route + " " + who + ": " + answer.status() + " " + answer.body());
        }
    }
}

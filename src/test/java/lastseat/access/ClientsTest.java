package lastseat.access;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import lastseat.testkit.LastseatClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.matchingJsonPath;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Client keys on a real server: each client sees, cancels and replays only its own purchases; the same
 * Idempotency-Key from two clients is two purchases; a revoked key is refused by the next request; a
 * client past its limit on purchases in flight is told 429 while other clients still buy.
 */
class ClientsTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    @Test
    void oneClientCannotSeeCancelOrReplayAnothersPurchase() {
        String event = app.newEvent("A1");
        LastseatClient other = app.client().as(newClient(null));
        String key = UUID.randomUUID().toString();
        Answer mine = app.client().purchaseSeats(key, event, "A1");
        String id = mine.json().path("id").asText();

        Answer seen = other.get("/purchases/" + id);
        Answer cancelled = other.cancel(id);
        Answer listed = other.get("/purchases?state=CONFIRMED");
        Answer sameKey = other.purchaseSeats(key, event, "A1");

        assertThat(mine.status()).as(mine.toString()).isEqualTo(201);
        assertThat(seen.status()).as("as if it did not exist: " + seen).isEqualTo(404);
        assertThat(seen.json().path("type").asText()).isEqualTo("urn:lastseat:problem:unknown-purchase");
        assertThat(cancelled.status()).as(cancelled.toString()).isEqualTo(404);
        assertThat(listed.json().path("count").asInt()).as("another client's purchases are not listed").isZero();
        assertThat(sameKey.status()).as("not a replay of the other client's answer: " + sameKey).isEqualTo(409);
        assertThat(sameKey.header("Idempotent-Replayed")).isNull();
        assertThat(app.client().purchaseView(id).path("state").asText()).isEqualTo("CONFIRMED");
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void theSameIdempotencyKeyFromTwoClientsIsTwoPurchasesEachReplayedToItsOwnClient() {
        String event = app.newEvent("A1", "A2");
        LastseatClient other = app.client().as(newClient(null));
        String key = UUID.randomUUID().toString();

        Answer mine = app.client().purchaseSeats(key, event, "A1");
        Answer theirs = other.purchaseSeats(key, event, "A2");
        Answer myReplay = app.client().purchaseSeats(key, event, "A1");
        Answer theirReplay = other.purchaseSeats(key, event, "A2");

        assertThat(mine.status()).as(mine.toString()).isEqualTo(201);
        assertThat(theirs.status()).as(theirs.toString()).isEqualTo(201);
        assertThat(theirs.json().path("id").asText()).isNotEqualTo(mine.json().path("id").asText());
        assertThat(myReplay.body()).isEqualTo(mine.body());
        assertThat(myReplay.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(theirReplay.body()).isEqualTo(theirs.body());
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(2);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aRevokedKeyIsRefusedByTheNextRequestAndItsNameIsNeverReused() {
        String event = app.newEvent("A1", "A2");
        String name = "revoked-" + UUID.randomUUID().toString().substring(0, 8);
        LastseatClient client = app.client().as(newClient(name, null));
        Answer before = client.purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        Answer revoked = admin("DELETE", "/admin/clients/" + name, null);
        Answer after = client.purchaseSeats(UUID.randomUUID().toString(), event, "A2");
        Answer again = admin("DELETE", "/admin/clients/" + name, null);
        Answer reused = admin("POST", "/admin/clients", "{\"name\":\"" + name + "\"}");

        assertThat(before.status()).as(before.toString()).isEqualTo(201);
        assertThat(revoked.status()).as(revoked.toString()).isEqualTo(200);
        assertThat(revoked.json().path("revoked").asBoolean()).isTrue();
        assertThat(after.status()).as(after.toString()).isEqualTo(401);
        assertThat(after.header("WWW-Authenticate")).contains("invalid_token");
        assertThat(again.status()).as("revoked once: " + again).isEqualTo(404);
        assertThat(reused.status()).as(reused.toString()).isEqualTo(409);
        assertThat(app.client().event(event).path("sold").asInt()).as("nothing bought with the revoked key").isEqualTo(1);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aKeyIsShownOnceAndOnlyItsHashIsKept() {
        String name = "hashed-" + UUID.randomUUID().toString().substring(0, 8);
        Answer created = admin("POST", "/admin/clients", "{\"name\":\"" + name + "\"}");
        String key = created.json().path("key").asText();
        Answer listed = admin("GET", "/admin/clients", null);

        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        assertThat(key).matches("ls_[0-9a-f]{16}_[0-9a-f]{32}");
        assertThat(listed.body()).contains(name).doesNotContain(key).doesNotContain(key.substring(20));
        assertThat(app.db().strings("SELECT key_hash FROM api_keys WHERE name = ?", name)).singleElement()
                .asString().hasSize(64).doesNotContain(key.substring(20));
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aClientPastItsLimitOfPurchasesInFlightIsTold429WhileOtherClientsStillBuy() throws Exception {
        String event = app.newEvent("A1", "A2", "A3", "A4");
        LastseatClient limited = app.client().as(newClient(1));
        // The limited client's first purchase stays in flight in a slow fraud check until the test has seen the rest.
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1)
                .withRequestBody(matchingJsonPath("$.buyer.id", com.github.tomakehurst.wiremock.client.WireMock.equalTo("slow")))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBodyFile("fraud-check-approve.json").withFixedDelay(500)));
        CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> limited.purchase(UUID.randomUUID().toString(),
                LastseatClient.buyerBody(event, "slow", "tok_ok", "A1")));
        awaitFraudCheckOf("slow");

        Answer second = limited.purchaseSeats(UUID.randomUUID().toString(), event, "A2");
        Answer others = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A3");
        Answer firstAnswer = first.get(10, TimeUnit.SECONDS);
        Answer afterwards = limited.purchaseSeats(UUID.randomUUID().toString(), event, "A4");

        assertThat(second.status()).as(second.toString()).isEqualTo(429);
        assertThat(second.header("Retry-After")).isEqualTo("1");
        assertThat(second.json().path("type").asText()).isEqualTo("urn:lastseat:problem:client-limit");
        assertThat(others.status()).as("another client is not limited: " + others).isEqualTo(201);
        assertThat(firstAnswer.status()).as(firstAnswer.toString()).isEqualTo(201);
        assertThat(afterwards.status()).as("the slot came back: " + afterwards).isEqualTo(201);
        assertThat(app.client().event(event).path("sold").asInt()).as("nothing of the refused purchase kept").isEqualTo(3);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void theOperatorChangesAClientsLimitAndTheNextRequestUsesIt() {
        String name = "limited-" + UUID.randomUUID().toString().substring(0, 8);
        newClient(name, 1);

        Answer raised = admin("PATCH", "/admin/clients/" + name, "{\"maxInFlight\":5}");
        Answer lifted = admin("PATCH", "/admin/clients/" + name, "{\"maxInFlight\":null}");
        Answer absurd = admin("PATCH", "/admin/clients/" + name, "{\"maxInFlight\":-3}");
        Answer unknownField = admin("PATCH", "/admin/clients/" + name, "{\"maxInflight\":3}");

        assertThat(raised.status()).as(raised.toString()).isEqualTo(200);
        assertThat(raised.json().path("maxInFlight").asInt()).isEqualTo(5);
        assertThat(lifted.json().path("maxInFlight").isNull()).isTrue();
        assertThat(absurd.status()).isEqualTo(400);
        assertThat(unknownField.status()).isEqualTo(400);
        assertThat(app.db().strings("SELECT CAST(max_in_flight AS VARCHAR(10)) FROM api_keys WHERE name = ?", name))
                .as("the refused changes changed nothing").containsExactly((String) null);
        Invariants.resourcesCameBack(app);
    }

    private static void awaitFraudCheckOf(String buyer) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (app.stubs().findAll(postRequestedFor(urlPathEqualTo("/fraud/checks"))
                .withRequestBody(matchingJsonPath("$.buyer.id", com.github.tomakehurst.wiremock.client.WireMock.equalTo(buyer)))).isEmpty()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("the fraud check of " + buyer + " never arrived");
            }
            Thread.sleep(5);
        }
    }

    private static String newClient(Integer limit) {
        return newClient("shop-" + UUID.randomUUID().toString().substring(0, 8), limit);
    }

    private static String newClient(String name, Integer limit) {
        Answer created = admin("POST", "/admin/clients", "{\"name\":\"" + name + "\"" + (limit == null ? "" : ",\"maxInFlight\":" + limit) + "}");
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        return created.json().path("key").asText();
    }

    private static Answer admin(String method, String path, String body) {
        Instance at = app.client().instance();
        return app.client().send(method, at.admin(), path, at.operatorKey(), null, body);
    }
}

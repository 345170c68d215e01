package lastseat.drills;

import lastseat.testkit.FreshPostgres;
import com.github.tomakehurst.wiremock.WireMockServer;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Keys live in the database, so every instance of one PostgreSQL database decides the same: a client
 * key made on one instance works on the other at once, and once revoked on one it is refused by the
 * very next request to the other — no cache to wait out. Also: the same Idempotency-Key from two
 * clients is two purchases across the instances. Skipped, loudly, when PostgreSQL is not reachable —
 * unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RevocationTest {
    private final FreshPostgres database = new FreshPostgres("lastseat_keys_");
    private WireMockServer stubs;
    private final List<ServerProcess> servers = new ArrayList<>();

    @BeforeAll
    void twoInstancesOnOneDatabase() throws Exception {
        database.create("RevocationTest");
        stubs = StubServer.create();
        stubs.start();
        URI stubsUri = URI.create("http://127.0.0.1:" + stubs.port());
        Path dir = Files.createDirectories(Path.of("target", "revocation", database.name()));
        Map<String, String> settings = Map.of("db.url", database.url(), "db.user", "postgres", "purchase.deadline", "3s");
        for (int i = 0; i < 2; i++) {
            servers.add(ServerProcess.start(dir, stubsUri, settings));
        }
    }

    @AfterAll
    void stopServersAndDropDatabase() throws SQLException {
        servers.forEach(ServerProcess::close);
        if (stubs != null) {
            stubs.stop();
        }
        database.close();
    }

    @Test
    void aKeyRevokedOnOneInstanceIsRefusedByTheNextRequestToTheOther() {
        Instance a = servers.get(0).instance();
        Instance b = servers.get(1).instance();
        try (LastseatClient operator = new LastseatClient(a)) {
            String event = operator.newEvent(4);
            Answer created = operator.send("POST", a.admin(), "/admin/clients", a.operatorKey(), null, "{\"name\":\"shop-on-both\"}");
            String key = created.json().path("key").asText();
            LastseatClient onB = operator.on(b.withClientKey(key));

            Answer before = onB.purchaseQuantity(UUID.randomUUID().toString(), event, 1, "ada");
            Answer revoked = operator.send("DELETE", a.admin(), "/admin/clients/shop-on-both", a.operatorKey(), null, null);
            Answer after = onB.purchaseQuantity(UUID.randomUUID().toString(), event, 1, "ada");
            Answer read = onB.get("/purchases/" + before.json().path("id").asText());

            assertThat(created.status()).as(created.toString()).isEqualTo(201);
            assertThat(before.status()).as("made on one instance, good on the other at once: " + before).isEqualTo(201);
            assertThat(revoked.status()).as(revoked.toString()).isEqualTo(200);
            assertThat(after.status()).as("revoked on one instance, refused by the next request to the other: " + after).isEqualTo(401);
            assertThat(read.status()).as(read.toString()).isEqualTo(401);
            assertThat(operator.event(event).path("sold").asInt()).as("nothing bought with the revoked key").isEqualTo(1);
            assertThat(operator.freePaymentPermits()).isEqualTo(20);
        }
    }

    @Test
    void theSameIdempotencyKeyFromTwoClientsAtTwoInstancesIsTwoPurchases() {
        Instance a = servers.get(0).instance();
        Instance b = servers.get(1).instance();
        try (LastseatClient operator = new LastseatClient(a)) {
            String event = operator.newEvent(4);
            String other = operator.send("POST", a.admin(), "/admin/clients", a.operatorKey(), null, "{\"name\":\"second-shop\"}")
                    .json().path("key").asText();
            String key = UUID.randomUUID().toString();

            Answer mine = operator.purchaseQuantity(key, event, 1, "ada");
            Answer theirs = operator.on(b.withClientKey(other)).purchaseQuantity(key, event, 1, "ada");
            Answer myReplayOnB = operator.on(b).purchaseQuantity(key, event, 1, "ada");

            assertThat(mine.status()).as(mine.toString()).isEqualTo(201);
            assertThat(theirs.status()).as(theirs.toString()).isEqualTo(201);
            assertThat(theirs.json().path("id").asText()).isNotEqualTo(mine.json().path("id").asText());
            assertThat(myReplayOnB.body()).as("the first client's answer, replayed by the other instance").isEqualTo(mine.body());
            assertThat(operator.event(event).path("sold").asInt()).isEqualTo(2);
        }
    }
}

package lastseat.access;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.support.Waits;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Requests presenting one key while its read waits for a connection share that read — and still see a
 * revocation committed before they arrived. With both pool connections held: request A's read of the
 * shop's key waits; the key is revoked (committed); request B, arriving after the revocation, joins A's
 * read, whose query has not been sent. Once the pool is free, one read answers both, and both are
 * refused: a shared read is sent after every request it answers arrived. A request after that reads
 * for itself.
 */
class SharedKeyReadTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("db.pool-size", "2", "db.connection-timeout", "10s",
                                                           "purchase.deadline", "10s"));

    @Test
    void requestsWithOneKeyShareAWaitingReadAndAKeyRevokedBeforeTheyArrivedIsRefusedToAll() throws Exception {
        String name = "shared-" + UUID.randomUUID().toString().substring(0, 8);
        Answer created = app.client().send("POST", app.client().instance().admin(), "/admin/clients",
                                           app.client().instance().operatorKey(), null, "{\"name\":\"" + name + "\"}");
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        LastseatClient shop = app.client().as(created.json().path("key").asText());
        // A purchase nobody made: 404 once the key is read and good, 401 when it is not.
        String nothing = "/purchases/" + UUID.randomUUID();
        assertThat(shop.get(nothing).status()).as("the key works").isEqualTo(404);
        ApiKeys keys = app.services().apiKeys();
        long readsBefore = keys.reads().sent();
        long joinedBefore = keys.reads().joined();

        CountDownLatch taken = new CountDownLatch(2);
        CountDownLatch revokeNow = new CountDownLatch(1);
        CountDownLatch revoked = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        CompletableFuture<Answer> first;
        CompletableFuture<Answer> second;
        try (ExecutorService holders = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Integer> revoker = holders.submit(() -> app.services().db().read(c -> {
                taken.countDown();
                Waits.quietly(revokeNow);
                // On a connection of the pool's own, so that the requests' reads still wait for one; committed
                // before the connection is let go.
                c.setAutoCommit(false);
                int rows = lastseat.db.Sql.update(c, "UPDATE api_keys SET revoked_at = CURRENT_TIMESTAMP WHERE name = ?", name);
                c.commit();
                c.setAutoCommit(true);
                revoked.countDown();
                Waits.quietly(letGo);
                return rows;
            }));
            holders.submit(() -> app.services().db().read(c -> {
                taken.countDown();
                Waits.quietly(letGo);
                return null;
            }));
            try {
                assertThat(taken.await(5, TimeUnit.SECONDS)).as("both connections held").isTrue();
                first = CompletableFuture.supplyAsync(() -> shop.get(nothing), holders);
                Waits.until(() -> keys.reads().waiting() == 1, "request A's read waiting for a connection");

                revokeNow.countDown();
                assertThat(revoked.await(5, TimeUnit.SECONDS)).as("the key revoked, committed").isTrue();
                second = CompletableFuture.supplyAsync(() -> shop.get(nothing), holders);
                Waits.until(() -> keys.reads().joined() == joinedBefore + 1, "request B joined A's read");
            } finally {
                letGo.countDown();
            }
            assertThat(revoker.get()).as("rows revoked").isEqualTo(1);
        }

        assertThat(first.get().status()).as("A, whose read was sent after the revocation: " + first.get()).isEqualTo(401);
        assertThat(second.get().status()).as("B, arrived after the revocation, answered by A's read: " + second.get()).isEqualTo(401);
        assertThat(keys.reads().sent() - readsBefore).as("one read for both").isEqualTo(1);
        Answer later = shop.get(nothing);
        assertThat(later.status()).as(later.toString()).isEqualTo(401);
        assertThat(keys.reads().sent() - readsBefore).as("a request after the shared read reads for itself").isEqualTo(2);
        assertThat(keys.reads().waiting()).as("no read left waiting").isZero();
        Invariants.resourcesCameBack(app);
    }
}

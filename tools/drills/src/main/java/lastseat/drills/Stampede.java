package lastseat.drills;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.config.LastseatConfig;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.inventory.Inventory;
import lastseat.inventory.NewEvent;
import lastseat.inventory.Order;
import lastseat.purchase.Purchases;

import java.math.BigDecimal;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The booking step under a stampede, twice, on a database of the drill's own (H2 in memory, the
 * service's schema and defaults): {@code buyers} buyers on their own virtual threads (buyer i wants
 * seat i mod seats) book after the same pause, which lasts until every buyer has reached it (at most
 * {@link #MAX_PAUSE}) — the worst a slow outside call does to a crowd, made certain instead of
 * likely, so the unsafe run shows the race every time rather than by luck.
 *
 * <p>Safe is the service's own reservation, {@link Purchases#reserve}, whose claim is
 * {@link Inventory#SEAT_CLAIM}. Unsafe is that same statement with {@link Inventory#SEAT_CLAIM_GUARD}
 * taken out, after a look before the pause: every buyer who looked during the pause saw the seat free,
 * so every one of them is told yes.
 *
 * <p>Hazard: the unsafe arm double-books on purpose. It lives here, in the drills, and runs only on the
 * drill's own throwaway database; the service has no way to run its claim without the guard.
 */
final class Stampede {
    static final Duration MAX_PAUSE = Duration.ofSeconds(2);
    static final int MAX_BUYERS = 10_000;
    // The throwaway database's migrations are not the drill's findings; kept referenced so the level holds.
    private static final Logger MIGRATIONS = Logger.getLogger("org.flywaydb");

    static {
        MIGRATIONS.setLevel(Level.WARNING);
    }

    enum Mode { UNSAFE, SAFE }

    /** One buyer's answer; {@code holder} is what the seat names as its holder when the buyer got it. */
    record Answer(String buyer, String seat, boolean confirmed, String message, String holder) {
    }

    /** Who holds the seat at the end, and every buyer who was told it was theirs. */
    record SeatReport(String owner, List<String> toldYes) {
    }

    record Report(Mode mode, int buyers, int seats, int confirmed, int refused, int doubleCount,
                  Map<String, SeatReport> perSeat, List<Answer> answers) {
    }

    private Stampede() {
    }

    /** The statement the unsafe arm runs: the service's claim, its guard cut off the end. */
    static String unguardedClaim() {
        if (!Inventory.SEAT_CLAIM.endsWith(Inventory.SEAT_CLAIM_GUARD)) {
            throw new IllegalStateException("the service's seat claim no longer ends with its guard: " + Inventory.SEAT_CLAIM);
        }
        return Inventory.SEAT_CLAIM.substring(0, Inventory.SEAT_CLAIM.length() - Inventory.SEAT_CLAIM_GUARD.length());
    }

    /** One stampede on a fresh in-memory database, closed afterwards. */
    static Report run(Mode mode, int buyers, int seatCount) throws InterruptedException {
        if (buyers < 2 || buyers > MAX_BUYERS) {
            throw new IllegalArgumentException("buyers must be from 2 to " + MAX_BUYERS);
        }
        if (seatCount < 1 || seatCount >= buyers || seatCount > 100) {
            throw new IllegalArgumentException("seats must be from 1 to " + Math.min(100, buyers - 1) + " (fewer than the buyers, or there is no race)");
        }
        LastseatConfig config = LastseatConfig.from(Config.just(
                ConfigSources.create(Map.of("db.url", "jdbc:h2:mem:stampede-" + UUID.randomUUID())),
                ConfigSources.classpath("application.yaml")));
        try (Database db = Database.open(config.db())) {
            Clock clock = Clock.systemUTC();
            Inventory inventory = new Inventory(db, config.purchase(), clock);
            Purchases purchases = new Purchases(db, inventory, clock, config.purchase().holdTtl(), config.reconcile().settleTime());
            List<String> seats = new ArrayList<>();
            for (int i = 1; i <= seatCount; i++) {
                seats.add("A" + i);
            }
            String eventId = "drill-stampede-" + UUID.randomUUID().toString().substring(0, 8);
            inventory.create(new NewEvent(eventId, "Stampede drill", seats, null, BigDecimal.ONE, "EUR")
                                     .valid(config.events().maxCapacity()));
            List<Answer> answers = release(buyers, seats, (seat, buyer, pause) -> switch (mode) {
                case UNSAFE -> unsafe(db, eventId, seat, buyer, pause) ? Optional.of(buyer) : Optional.empty();
                case SAFE -> safe(purchases, eventId, seat, buyer, pause);
            });
            return report(mode, db, eventId, seats, answers);
        }
    }

    /** Look, pause, then claim what was seen with the guard taken out; the seat's holder is {@code buyer}. */
    private static boolean unsafe(Database db, String eventId, String seat, String buyer, Runnable pause) {
        boolean free = db.read(c -> Sql.list(c, "SELECT state FROM seats WHERE event_id = ? AND label = ?",
                                             rs -> rs.getString(1), eventId, seat)).equals(List.of("AVAILABLE"));
        pause.run();
        return free && db.inTransaction(c -> {
            try (PreparedStatement claim = c.prepareStatement(unguardedClaim())) {
                claim.setString(1, buyer);
                claim.setString(2, eventId);
                claim.setString(3, seat);
                return claim.executeUpdate() == 1;
            }
        });
    }

    /** Pause, then the service's reservation of the seat; the purchase that holds it, or empty when its claim missed. */
    private static Optional<String> safe(Purchases purchases, String eventId, String seat, String buyer, Runnable pause) {
        pause.run();
        return purchases.reserve(new Order(eventId, List.of(seat), 1, buyer, buyer + "@stampede.invalid", "tok_stampede", "stampede",
                                           "stampede-" + UUID.randomUUID())) instanceof Purchases.Reservation.Held held
                ? Optional.of(held.hold().purchaseId()) : Optional.empty();
    }

    private interface Booking {
        Optional<String> book(String seat, String buyer, Runnable pause);
    }

    private static List<Answer> release(int buyers, List<String> seats, Booking booking) throws InterruptedException {
        CountDownLatch atPause = new CountDownLatch(buyers);
        Runnable pause = () -> {
            atPause.countDown();
            try {
                atPause.await(MAX_PAUSE.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted in the pause", e);
            }
        };
        // The buyers need no start line of their own: they all meet at the pause, which is the race.
        try (ExecutorService crowd = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Answer>> futures = new ArrayList<>();
            for (int i = 0; i < buyers; i++) {
                String seat = seats.get(i % seats.size());
                String buyer = "buyer-" + (i + 1);
                futures.add(crowd.submit(() -> {
                    Optional<String> holder = booking.book(seat, buyer, pause);
                    return new Answer(buyer, seat, holder.isPresent(), holder.isPresent() ? "confirmed" : seat + " is already taken",
                                      holder.orElse(null));
                }));
            }
            long until = System.nanoTime() + MAX_PAUSE.multipliedBy(3).plusSeconds(10).toNanos();
            List<Answer> answers = new ArrayList<>();
            for (Future<Answer> future : futures) {
                try {
                    answers.add(future.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS));
                } catch (ExecutionException | TimeoutException e) {
                    future.cancel(true);
                    throw new IllegalStateException("a stampede buyer did not finish: " + e, e);
                }
            }
            return answers;
        }
    }

    private static Report report(Mode mode, Database db, String eventId, List<String> seats, List<Answer> answers) {
        Map<String, String> owners = new LinkedHashMap<>();
        db.read(c -> Sql.list(c, "SELECT label, purchase_id FROM seats WHERE event_id = ? ORDER BY position",
                              rs -> owners.put(rs.getString(1), rs.getString(2)), eventId));
        Map<String, String> buyerByHolder = new LinkedHashMap<>();
        answers.stream().filter(Answer::confirmed).forEach(a -> buyerByHolder.put(a.holder(), a.buyer()));
        Map<String, SeatReport> perSeat = new LinkedHashMap<>();
        int doubles = 0;
        for (String seat : seats) {
            List<String> toldYes = answers.stream().filter(a -> a.confirmed() && a.seat().equals(seat)).map(Answer::buyer).toList();
            perSeat.put(seat, new SeatReport(buyerByHolder.getOrDefault(owners.get(seat), owners.get(seat)), toldYes));
            doubles += toldYes.size() > 1 ? 1 : 0;
        }
        int confirmed = (int) answers.stream().filter(Answer::confirmed).count();
        return new Report(mode, answers.size(), seats.size(), confirmed, answers.size() - confirmed, doubles, perSeat, answers);
    }
}

package lastseat.drill;

import lastseat.config.DrillsConfig;
import lastseat.db.Database;
import lastseat.db.DatabaseBusy;
import lastseat.db.Sql;
import lastseat.inventory.Inventory;
import lastseat.inventory.NewEvent;
import lastseat.purchase.Purchases;
import com.fasterxml.jackson.annotation.JsonIgnore;
import lastseat.web.Problem;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One stampede: a fresh event with {@code seats} seats, {@code buyers} buyers on their own virtual
 * threads (buyer i wants seat i mod seats), each booking through {@link Stampede} in the chosen
 * mode — safe is the product's own reservation; every answer is recorded.
 *
 * <p>The pause inside the booking step lasts until every buyer has reached it (at most
 * {@code drills.max-pause}): the worst a slow outside call does to a crowd, made certain instead of
 * likely, so an unsafe run shows the race every time rather than by luck.
 */
final class StampedeRun {
    private static final Logger LOG = Logger.getLogger(StampedeRun.class.getName());
    enum Mode { UNSAFE, SAFE }

    /** The body of {@code POST /drills/stampede}. */
    record Request(String mode, Integer buyers, Integer seats) {
        Mode validMode() {
            if (mode == null) {
                throw Problem.badRequest("invalid-field", "mode is required: \"unsafe\" or \"safe\"");
            }
            return switch (mode) {
                case "unsafe" -> Mode.UNSAFE;
                case "safe" -> Mode.SAFE;
                default -> throw Problem.badRequest("invalid-field", "mode must be \"unsafe\" or \"safe\", not \"" + mode + "\"");
            };
        }

        int validBuyers(int max) {
            if (buyers == null || buyers < 2 || buyers > max) {
                throw Problem.badRequest("invalid-field", "buyers must be a whole number from 2 to " + max);
            }
            return buyers;
        }

        int validSeats(int buyerCount) {
            int count = seats == null ? 1 : seats;
            if (count < 1 || count > Math.min(100, buyerCount - 1)) {
                throw Problem.badRequest("invalid-field", "seats must be from 1 to " + Math.min(100, buyerCount - 1)
                                                          + " (fewer than the buyers, or there is no race)");
            }
            return count;
        }
    }

    /** One buyer's answer; {@code holder} is what the seat names as its holder when the buyer got it. */
    record Answer(String buyer, String seat, boolean confirmed, String message, @JsonIgnore String holder) {
    }

    record SeatReport(String owner, List<String> toldYes) {
    }

    record Report(String mode, String eventId, int buyers, int seats, int confirmed, int refused, int doubleCount,
                  Map<String, SeatReport> perSeat, List<Answer> answers) {
    }

    private final Database db;
    private final Inventory inventory;
    private final Stampede stampede;
    private final DrillsConfig config;

    StampedeRun(Database db, Inventory inventory, Purchases purchases, DrillsConfig config) {
        this.db = db;
        this.inventory = inventory;
        this.stampede = new Stampede(db, purchases);
        this.config = config;
    }

    Report run(Request request) throws InterruptedException {
        Mode mode = request.validMode();
        int buyers = request.validBuyers(config.maxBuyers());
        int seatCount = request.validSeats(buyers);
        List<String> seats = new ArrayList<>();
        for (int i = 1; i <= seatCount; i++) {
            seats.add("A" + i);
        }
        String eventId = "drill-stampede-" + UUID.randomUUID().toString().substring(0, 8);
        inventory.create(new NewEvent(eventId, "Stampede drill (" + mode.name().toLowerCase(Locale.ROOT) + ")", seats,
                                      null, BigDecimal.ONE, "EUR").valid(seats.size()));
        List<Answer> answers = release(mode, eventId, seats, buyers);
        return report(mode, eventId, seats, answers);
    }

    private List<Answer> release(Mode mode, String eventId, List<String> seats, int buyers) throws InterruptedException {
        CountDownLatch atPause = new CountDownLatch(buyers);
        Runnable pause = () -> {
            atPause.countDown();
            try {
                atPause.await(config.maxPause().toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted in the pause", e);
            }
        };
        // The buyers need no start line of their own: they all meet at the pause, which is the race.
        try (ExecutorService crowd = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Answer>> answers = new ArrayList<>();
            for (int i = 0; i < buyers; i++) {
                String seat = seats.get(i % seats.size());
                String buyer = "buyer-" + (i + 1);
                answers.add(crowd.submit(() -> book(mode, eventId, seat, buyer, pause)));
            }
            long until = System.nanoTime() + config.maxPause().multipliedBy(3).plusSeconds(10).toNanos();
            List<Answer> result = new ArrayList<>();
            for (Future<Answer> answer : answers) {
                result.add(answerOf(answer, until));
            }
            return result;
        }
    }

    /** One buyer's answer, waited for until {@code untilNanos}; a buyer past it is cancelled and refused. */
    private static Answer answerOf(Future<Answer> answer, long untilNanos) throws InterruptedException {
        try {
            return answer.get(Math.max(0, untilNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException | TimeoutException e) {
            answer.cancel(true);
            throw new IllegalStateException("a stampede buyer did not finish in time: " + e, e);
        }
    }

    private Answer book(Mode mode, String eventId, String seat, String buyer, Runnable pause) {
        try {
            String holder = switch (mode) {
                case UNSAFE -> stampede.unsafe(eventId, seat, buyer, pause) ? buyer : null;
                case SAFE -> stampede.safe(eventId, seat, buyer, pause).orElse(null);
            };
            return new Answer(buyer, seat, holder != null, holder != null ? "confirmed" : seat + " is already taken", holder);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "stampede buyer " + buyer + " could not book " + seat, e);
            return new Answer(buyer, seat, false, seat + " could not be booked: "
                    + (e instanceof DatabaseBusy ? "the database was busy" : "the booking failed; the server log says why"), null);
        }
    }

    private Report report(Mode mode, String eventId, List<String> seats, List<Answer> answers) {
        Map<String, String> owners = new LinkedHashMap<>();
        db.read(c -> Sql.list(c, "SELECT label, purchase_id FROM seats WHERE event_id = ? ORDER BY position",
                              rs -> owners.put(rs.getString(1), rs.getString(2)), eventId));
        Map<String, SeatReport> perSeat = new LinkedHashMap<>();
        int doubles = 0;
        Map<String, String> buyerByHolder = new LinkedHashMap<>();
        answers.stream().filter(Answer::confirmed).forEach(a -> buyerByHolder.put(a.holder(), a.buyer()));
        for (String seat : seats) {
            List<String> toldYes = answers.stream().filter(a -> a.confirmed() && a.seat().equals(seat)).map(Answer::buyer).toList();
            perSeat.put(seat, new SeatReport(buyerByHolder.getOrDefault(owners.get(seat), owners.get(seat)), toldYes));
            doubles += toldYes.size() > 1 ? 1 : 0;
        }
        int confirmed = (int) answers.stream().filter(Answer::confirmed).count();
        return new Report(mode.name().toLowerCase(Locale.ROOT), eventId, answers.size(), seats.size(), confirmed,
                          answers.size() - confirmed, doubles, perSeat, answers);
    }
}

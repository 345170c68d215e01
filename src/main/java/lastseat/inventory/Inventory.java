package lastseat.inventory;

import lastseat.config.PurchaseConfig;
import lastseat.db.Database;
import lastseat.db.SharedReads;
import lastseat.db.Sql;
import lastseat.work.Deadline;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Owns events and seats: creating them, reading them, and claiming seats for a purchase.
 *
 * <p>Contract: {@link #claim} claims every requested seat or none, in the caller's transaction, with one
 * conditional {@code UPDATE ... WHERE state = 'AVAILABLE'} per seat and a row-count check; a seat
 * is never held by two purchases. Seats are always touched in seat-position order, so two buyers
 * who want the same seats in opposite order wait for each other instead of deadlocking.
 *
 * <p>A hold lasts until its expiry. Past it, a purchase still HELD (its checks never ended) no
 * longer keeps its seats: reads count them as available, and a reservation that wants them first
 * expires that purchase ({@link #expiredHoldsOn}; the purchases' state machine makes the move) in
 * its own transaction, so two buyers can never both hold, let alone confirm, one seat. A purchase
 * whose payment is in flight or unknown is never expired.
 *
 * <p>Hazard: this class writes seats, never a purchase's state. A seat leaves HELD only through
 * {@link #sell} or {@link #giveBack}, called inside the transaction that moves its purchase out of
 * its state ({@code purchase.Purchases}); called anywhere else, capacity could come back twice.
 *
 * <p>A read that takes a {@link Deadline} is made for a request before it has reserved anything: it
 * waits for a connection no later than that ({@code null}: no request's deadline, the pool's own bound).
 */
public final class Inventory {
    private final Database db;
    private final PurchaseConfig purchase;
    private final Clock clock;

    public Inventory(Database db, PurchaseConfig purchase, Clock clock) {
        this.db = db;
        this.purchase = purchase;
        this.clock = clock;
        this.freeUpToReads = new SharedReads<>(db);
        this.availableReads = new SharedReads<>(db);
    }

    /** What creating an event did: the event, or the id was taken already (nothing created). */
    public sealed interface Creation {
        record Created(EventView event) implements Creation {
        }

        record Exists(String id) implements Creation {
        }
    }

    /** Creates the event with its seats, all AVAILABLE, in one transaction. */
    public Creation create(NewEvent.Valid event) {
        List<String> labels = event.labels();
        String id = event.id() != null ? event.id() : UUID.randomUUID().toString();
        boolean created = db.inTransaction(c -> {
            try (PreparedStatement insert = c.prepareStatement(
                    "INSERT INTO events (id, name, capacity, price, currency, created_at) VALUES (?, ?, ?, ?, ?, ?)")) {
                insert.setString(1, id);
                insert.setString(2, event.name());
                insert.setInt(3, labels.size());
                insert.setBigDecimal(4, event.price());
                insert.setString(5, event.currency());
                Sql.set(insert, 6, clock.instant());
                insert.executeUpdate();
            } catch (SQLException e) {
                if (Database.isUniqueViolation(e)) {
                    return false;
                }
                throw e;
            }
            try (PreparedStatement seat = c.prepareStatement(
                    "INSERT INTO seats (event_id, label, position, state) VALUES (?, ?, ?, 'AVAILABLE')")) {
                for (int i = 0; i < labels.size(); i++) {
                    seat.setString(1, id);
                    seat.setString(2, labels.get(i));
                    seat.setInt(3, i + 1);
                    seat.addBatch();
                    if (i % 1000 == 999) {
                        seat.executeBatch();
                    }
                }
                seat.executeBatch();
            }
            return true;
        });
        return created ? new Creation.Created(find(id, false).orElseThrow()) : new Creation.Exists(id);
    }

    public Optional<EventView> find(String id, boolean withSeats) {
        return db.read(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT name, capacity, price, currency FROM events WHERE id = ?")) {
                ps.setString(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    Map<SeatState, Integer> counts = counts(c, id);
                    return Optional.of(new EventView(id, rs.getString(1), rs.getInt(2),
                            counts.get(SeatState.AVAILABLE), counts.get(SeatState.HELD), counts.get(SeatState.SOLD),
                            rs.getBigDecimal(3).toPlainString(), rs.getString(4), withSeats ? seats(c, id) : List.of()));
                }
            }
        });
    }

    /** Why an order cannot be tried at all, found before any seat is touched. */
    public sealed interface Invalid {
        record UnknownEvent(String eventId) implements Invalid {
        }

        record TooMany(int asked, int capacity) implements Invalid {
        }

        record UnknownSeats(List<String> seats) implements Invalid {
        }
    }

    /**
     * Checks what can be checked before any seat is touched: the event exists, the quantity fits it
     * and every named seat belongs to it. Empty when the order may be tried.
     */
    public Optional<Invalid> validate(Order order) {
        Optional<Shape> shape = shape(order.eventId());
        if (shape.isEmpty()) {
            return Optional.of(new Invalid.UnknownEvent(order.eventId()));
        }
        if (order.quantity() > shape.get().capacity()) {
            return Optional.of(new Invalid.TooMany(order.quantity(), shape.get().capacity()));
        }
        if (order.namesSeats()) {
            List<String> unknown = order.seats().stream().filter(s -> !shape.get().positions().containsKey(s)).toList();
            if (!unknown.isEmpty()) {
                return Optional.of(new Invalid.UnknownSeats(unknown));
            }
        }
        return Optional.empty();
    }

    /**
     * What never changes about an event once it is created: its capacity and where each seat is.
     * Kept in memory after the first read, so that checking an order costs no database call.
     */
    private record Shape(int capacity, Map<String, Integer> positions) {
    }

    /** The most seats whose shape is kept in memory; past it the kept shapes are dropped and read again when asked. */
    private static final int KEPT_SEATS = 200_000;
    private final Map<String, Shape> shapes = new java.util.concurrent.ConcurrentHashMap<>();
    private int keptSeats;

    private Optional<Shape> shape(String eventId) {
        Shape known = shapes.get(eventId);
        if (known != null) {
            return Optional.of(known);
        }
        Optional<Shape> read = db.read(c -> {
            List<Integer> capacity = Sql.list(c, "SELECT capacity FROM events WHERE id = ?", rs -> rs.getInt(1), eventId);
            if (capacity.isEmpty()) {
                return Optional.<Shape>empty();
            }
            Map<String, Integer> positions = new java.util.HashMap<>();
            for (SeatPosition seat : Sql.list(c, "SELECT label, position FROM seats WHERE event_id = ?",
                                              rs -> new SeatPosition(rs.getString(1), rs.getInt(2)), eventId)) {
                positions.put(seat.label(), seat.position());
            }
            return Optional.of(new Shape(capacity.getFirst(), Map.copyOf(positions)));
        });
        // An unknown event is not kept: it may be created a moment later, here or on another instance.
        read.ifPresent(shape -> keep(eventId, shape));
        return read;
    }

    private synchronized void keep(String eventId, Shape shape) {
        if (keptSeats + shape.capacity() > KEPT_SEATS) {
            shapes.clear();
            keptSeats = 0;
        }
        if (shapes.putIfAbsent(eventId, shape) == null) {
            keptSeats += shape.capacity();
        }
    }

    /**
     * Step 1 of a purchase, in the caller's transaction (which also writes the purchase HELD): claims
     * every seat of the order for {@code purchaseId}, or reports the first it missed. On a miss the
     * caller rolls back, so nothing stays claimed.
     */
    public Claim claim(Connection c, Order order, String purchaseId) throws SQLException {
        return order.namesSeats()
                ? claimNamed(c, order.eventId(), order.seats(), purchaseId)
                : claimAny(c, order.eventId(), order.quantity(), purchaseId);
    }

    /** HELD → SOLD for every seat of the purchase; false when they are not all still held by it. */
    public boolean sell(Connection c, String purchaseId, int seatCount) throws SQLException {
        return Sql.update(c, "UPDATE seats SET state = 'SOLD' WHERE purchase_id = ? AND state = 'HELD'", purchaseId) == seatCount;
    }

    /** HELD → AVAILABLE for every seat of the purchase: capacity comes back once, with the transition. */
    public int giveBack(Connection c, String purchaseId) throws SQLException {
        return Sql.update(c, "UPDATE seats SET state = 'AVAILABLE', purchase_id = NULL WHERE purchase_id = ? AND state = 'HELD'",
                          purchaseId);
    }

    /**
     * The purchases past their expiry that hold seats this order could take, in purchase-id order (so
     * two reservations expiring the same purchases take their locks in the same order); the caller
     * expires them in its transaction before it claims.
     */
    public List<String> expiredHoldsOn(Connection c, Order order) throws SQLException {
        List<Object> args = new ArrayList<>(List.of(order.eventId(), clock.instant()));
        String seats = "";
        if (order.namesSeats()) {
            seats = " AND s.label IN (" + String.join(", ", Collections.nCopies(order.seats().size(), "?")) + ")";
            args.addAll(order.seats());
        }
        return Sql.list(c, "SELECT DISTINCT p.id FROM seats s JOIN purchases p ON p.id = s.purchase_id "
                           + "WHERE s.event_id = ? AND s.state = 'HELD' AND p.state = 'HELD' AND p.hold_expires_at <= ?"
                           + seats + " ORDER BY p.id FETCH FIRST " + purchase.maxSeats() + " ROWS ONLY",
                        rs -> rs.getString(1), args.toArray());
    }

    /** What a claim got: every seat asked for, or the first one it missed (null for a quantity). */
    public sealed interface Claim {
        record Claimed(List<String> labels, BigDecimal amount, String currency) implements Claim {
        }

        record Missed(String label) implements Claim {
        }
    }

    private record SeatPosition(String label, int position) {
    }

    private Claim claimNamed(Connection c, String eventId, List<String> labels, String purchaseId) throws SQLException {
        Shape shape = shapes.get(eventId);
        List<SeatPosition> ordered = shape == null ? positions(c, eventId, labels, false)
                : labels.stream().distinct().filter(shape.positions()::containsKey).map(l -> new SeatPosition(l, shape.positions().get(l)))
                        .sorted(java.util.Comparator.comparingInt(SeatPosition::position)).toList();
        try (PreparedStatement claim = claimStatement(c)) {
            for (SeatPosition seat : ordered) {
                if (!claimOne(claim, eventId, seat.label(), purchaseId)) {
                    return new Claim.Missed(seat.label());
                }
            }
        }
        return priced(c, eventId, ordered.stream().map(SeatPosition::label).toList());
    }

    private Claim claimAny(Connection c, String eventId, int quantity, String purchaseId) throws SQLException {
        Optional<List<String>> unlocked = db.skipsLockedRows() ? claimUnlocked(c, eventId, quantity, purchaseId) : Optional.empty();
        if (unlocked.isPresent()) {
            return priced(c, eventId, unlocked.get());
        }
        List<String> claimed = new ArrayList<>(quantity);
        try (PreparedStatement claim = claimStatement(c);
             PreparedStatement candidates = c.prepareStatement(
                     // Ordered by the whole index (event and state are fixed, so it is seat order): H2 then
                     // reads the first rows of the index and stops; "ORDER BY position" alone made it read
                     // and sort every free seat of the event, each purchase (29 % of the CPU of bin/bench onsale).
                     "SELECT label, position FROM seats WHERE event_id = ? AND state = 'AVAILABLE' AND position > ? "
                     + "ORDER BY event_id, state, position FETCH FIRST ? ROWS ONLY")) {
            int after = 0;
            for (int round = 0; round < purchase.reserveRounds() && claimed.size() < quantity; round++) {
                List<SeatPosition> found = new ArrayList<>();
                candidates.setString(1, eventId);
                candidates.setInt(2, after);
                candidates.setInt(3, (quantity - claimed.size()) * 4 + CANDIDATE_SPREAD);
                try (ResultSet rs = candidates.executeQuery()) {
                    while (rs.next()) {
                        found.add(new SeatPosition(rs.getString(1), rs.getInt(2)));
                    }
                }
                if (found.isEmpty()) {
                    break;
                }
                for (SeatPosition seat : inTryOrder(found, quantity)) {
                    if (claimed.size() == quantity) {
                        break;
                    }
                    if (claimOne(claim, eventId, seat.label(), purchaseId)) {
                        claimed.add(seat.label());
                    }
                }
                after = found.getLast().position();
            }
        }
        if (claimed.size() < quantity) {
            return new Claim.Missed(null);
        }
        return priced(c, eventId, claimed);
    }

    /**
     * The first free seats no other transaction holds a lock on, locked as they are read and claimed
     * without a wait; empty, with nothing kept, when there are not enough of them. A crowd at an
     * event's last seats then takes them one buyer to a seat, where claims of seats read as free
     * queued on each other's row locks: on PostgreSQL a blocked claim holds its connection until the
     * other commits, and at a last-seat burst those queues held the pool past the deadline (bin/bench
     * onsale-pg). Short, the buyer lets its locks go and goes on to the claims that wait
     * ({@link #claimAny}): a seat skipped here may be one whose claim is about to roll back, and the
     * answer must be the truth. Those claims hold no row meanwhile, so they still take their locks in
     * seat order and cannot deadlock.
     */
    private Optional<List<String>> claimUnlocked(Connection c, String eventId, int quantity, String purchaseId) throws SQLException {
        // One seat asked for: the read locks at most that one, so a miss holds nothing and needs no way back.
        Savepoint before = quantity > 1 ? c.setSavepoint() : null;
        List<String> found = Sql.list(c, "SELECT label FROM seats WHERE event_id = ? AND state = 'AVAILABLE' "
                                         + "ORDER BY event_id, state, position FETCH FIRST ? ROWS ONLY FOR UPDATE SKIP LOCKED",
                                      rs -> rs.getString(1), eventId, quantity);
        List<String> claimed = new ArrayList<>(quantity);
        if (found.size() == quantity) {
            try (PreparedStatement claim = claimStatement(c)) {
                for (String label : found) {
                    // Locked by this transaction and free when read, so nobody else can have changed it: the guarded
                    // claim cannot miss (a single seat's miss would otherwise keep its lock), but it is still what decides.
                    if (claimOne(claim, eventId, label, purchaseId)) {
                        claimed.add(label);
                    }
                }
            }
        }
        if (claimed.size() == quantity) {
            if (before != null) {
                c.releaseSavepoint(before);
            }
            return Optional.of(List.copyOf(claimed));
        }
        if (before != null) {
            // Back to before the locks: the claims that wait must not hold a row out of seat order. Released
            // too, or PostgreSQL keeps a subtransaction open under the rest of the reservation.
            c.rollback(before);
            c.releaseSavepoint(before);
        }
        return Optional.empty();
    }

    /** Free seats a quantity buyer looks at beyond what it needs, so that a crowd spreads over them. */
    private static final int CANDIDATE_SPREAD = 32;

    /**
     * The order a quantity buyer tries its candidates in. Buyers who all tried the lowest free seat
     * first would queue on that one row's lock, one commit after another — under a crowd on two
     * cores that queue outlived the deadline (bin/bench overload). A buyer of one seat starts at a
     * random candidate instead; it never holds two rows, so no order of its can deadlock. A buyer of
     * several keeps seat order, which is what keeps two of them from deadlocking each other.
     */
    private static List<SeatPosition> inTryOrder(List<SeatPosition> found, int quantity) {
        if (quantity > 1 || found.size() < 2) {
            return found;
        }
        int start = java.util.concurrent.ThreadLocalRandom.current().nextInt(found.size());
        List<SeatPosition> rotated = new ArrayList<>(found.subList(start, found.size()));
        rotated.addAll(found.subList(0, start));
        return rotated;
    }

    /**
     * The guard of {@link #SEAT_CLAIM}: the row changes only while the seat is free, so of two buyers
     * who both saw it free, the database lets exactly one have it.
     */
    public static final String SEAT_CLAIM_GUARD = " AND state = 'AVAILABLE'";

    /**
     * The claim of one seat (purchase id, event id, label), ending with {@link #SEAT_CLAIM_GUARD}.
     * Public so that the stampede drill can run this very statement with its guard taken out and
     * show the double booking the guard prevents; nothing in the service runs it without the guard.
     */
    public static final String SEAT_CLAIM = "UPDATE seats SET state = 'HELD', purchase_id = ? WHERE event_id = ? AND label = ?"
                                            + SEAT_CLAIM_GUARD;

    private static PreparedStatement claimStatement(Connection c) throws SQLException {
        return c.prepareStatement(SEAT_CLAIM);
    }

    private static boolean claimOne(PreparedStatement claim, String eventId, String label, String purchaseId) throws SQLException {
        claim.setString(1, purchaseId);
        claim.setString(2, eventId);
        claim.setString(3, label);
        return claim.executeUpdate() == 1;
    }

    private static Claim priced(Connection c, String eventId, List<String> labels) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT price, currency FROM events WHERE id = ?")) {
            ps.setString(1, eventId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Claim.Claimed(List.copyOf(labels),
                        rs.getBigDecimal(1).multiply(BigDecimal.valueOf(labels.size())), rs.getString(2));
            }
        }
    }

    /** The named seats of {@code order} that are taken now; {@code firstMissed} when they were let go since. */
    public List<String> taken(Order order, String firstMissed, Deadline deadline) {
        List<String> taken = taken(order, deadline);
        // The holder may have let go between our miss and this read; the seat we missed was taken then.
        return taken.isEmpty() ? List.of(firstMissed) : taken;
    }

    /** The named seats of {@code order} held or sold now, in seat order. */
    public List<String> taken(Order order, Deadline deadline) {
        return db.read(deadline, c -> positions(c, order.eventId(), order.seats(), true).stream().map(SeatPosition::label).toList());
    }

    /**
     * Seats of the event AVAILABLE now, counted up to {@code enough} at most: an index range that stops
     * early, cheap however large the event. (A hold past its expiry is not counted: this may say fewer
     * than {@link #availableUpTo} would, never more.)
     */
    public int freeUpTo(String eventId, int enough, Deadline deadline) {
        return freeUpToReads.read(new FreeUpTo(eventId, enough), deadline, c -> Sql.list(c,
                "SELECT COUNT(*) FROM (SELECT 1 FROM seats WHERE event_id = ? AND state = 'AVAILABLE' FETCH FIRST ? ROWS ONLY) x",
                rs -> rs.getInt(1), eventId, enough).getFirst());
    }

    /**
     * Seats of the event free now, an expired hold counted as free, counted up to {@code enough}: exact
     * below it. It reads the AVAILABLE seats up to {@code enough} and, only when those are fewer, the
     * held ones — never the sold ones, which a sold-out event's every refused buyer would otherwise scan.
     * One statement, so a hold released between its two parts is not missed by both.
     */
    public int availableUpTo(String eventId, int enough, Deadline deadline) {
        return availableReads.read(new FreeUpTo(eventId, enough), deadline, c -> Sql.list(c,
                "SELECT a.n + CASE WHEN a.n < ? THEN (SELECT COUNT(*) FROM (SELECT 1 FROM seats s JOIN purchases p ON p.id = s.purchase_id "
                + "WHERE s.event_id = ? AND s.state = 'HELD' AND p.state = 'HELD' AND p.hold_expires_at <= ? FETCH FIRST ? ROWS ONLY) y) "
                + "ELSE 0 END FROM (SELECT COUNT(*) AS n FROM (SELECT 1 FROM seats WHERE event_id = ? AND state = 'AVAILABLE' "
                + "FETCH FIRST ? ROWS ONLY) x) a",
                rs -> rs.getInt(1), enough, eventId, clock.instant(), enough, eventId, enough).getFirst());
    }

    /*
     * The counts a crowd of refused buyers reads to learn whether the seats are gone: shared while they
     * wait for a connection (SharedReads), so that a burst at one event sends a few reads, not one per buyer.
     */
    private record FreeUpTo(String eventId, int enough) {
    }

    private final SharedReads<FreeUpTo, Integer> freeUpToReads;
    private final SharedReads<FreeUpTo, Integer> availableReads;

    /** The named seats of the event in seat order; with {@code takenOnly}, just those held or sold. */
    private static List<SeatPosition> positions(Connection c, String eventId, List<String> labels, boolean takenOnly)
            throws SQLException {
        List<Object> args = new ArrayList<>(labels.size() + 1);
        args.add(eventId);
        args.addAll(labels);
        return Sql.list(c, "SELECT label, position FROM seats WHERE event_id = ? AND label IN ("
                           + String.join(", ", Collections.nCopies(labels.size(), "?")) + ")"
                           + (takenOnly ? " AND state <> 'AVAILABLE'" : "") + " ORDER BY position",
                        rs -> new SeatPosition(rs.getString(1), rs.getInt(2)), args.toArray());
    }

    private enum SeatState { AVAILABLE, HELD, SOLD }

    /** A seat's state as buyers see it: held by a purchase whose hold has expired counts as available. */
    private static final String SEEN_STATE = "CASE WHEN s.state = 'HELD' AND p.state = 'HELD' AND p.hold_expires_at <= ? "
                                             + "THEN 'AVAILABLE' ELSE s.state END";

    private Map<SeatState, Integer> counts(Connection c, String eventId) throws SQLException {
        Map<SeatState, Integer> counts = new EnumMap<>(SeatState.class);
        for (SeatState state : SeatState.values()) {
            counts.put(state, 0);
        }
        for (var row : Sql.list(c, "SELECT seen, COUNT(*) FROM (SELECT " + SEEN_STATE + " AS seen FROM seats s "
                                   + "LEFT JOIN purchases p ON p.id = s.purchase_id WHERE s.event_id = ?) x GROUP BY seen",
                                rs -> Map.entry(SeatState.valueOf(rs.getString(1)), rs.getInt(2)), clock.instant(), eventId)) {
            counts.put(row.getKey(), row.getValue());
        }
        return counts;
    }

    private List<EventView.SeatView> seats(Connection c, String eventId) throws SQLException {
        return Sql.list(c, "SELECT s.label, " + SEEN_STATE + " FROM seats s LEFT JOIN purchases p ON p.id = s.purchase_id "
                           + "WHERE s.event_id = ? ORDER BY s.position",
                        rs -> new EventView.SeatView(rs.getString(1), rs.getString(2)), clock.instant(), eventId);
    }
}

package lastseat.drills;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * What one money-audit campaign does, drawn from its seed before anything runs: the events, each
 * buyer (event, seats or quantity, arrival gap, and the answers its payment calls get), the cycle of
 * answers the provider's status lookups get, and the schedule of kills, unreachable windows (their
 * connections refused or timing out) and refund/email outages, anchored on buyer arrivals. Same seed and size, same plan; what the server
 * makes of it (the interleaving) differs from run to run.
 *
 * <p>Every draw comes from one {@link SplittableRandom} in a fixed order, so adding a draw anywhere
 * but at the end changes what every later seed means; add new draws last.
 *
 * <p>Hazard: the plan is built against the ledger's parameters ({@code decide},
 * {@code processAfterMillis}); a ledger without them ignores them and captures at arrival, which
 * turns a decline into a capture and a late capture into a prompt one — a weaker campaign, not a
 * wrong one.
 */
final class MoneyPlan {
    static final int SEATS_PER_EVENT = 6;
    static final int BUYERS_AT_ONCE = 12;
    /** The longest {@code processAfterMillis} drawn: after it no capture can still appear by itself. */
    static final int LATEST_PROCESSING_MILLIS = 4000;

    /** What one payment call (POST /payments) gets. */
    enum Call {
        OK("ok"),
        DECLINE("decline"),
        SLOW_CAPTURE("capture, answered past the deadline"),
        RESET_AFTER_CAPTURE("reset after capture"),
        RESET_BEFORE_CAPTURE("reset before capture"),
        ERROR_BEFORE_CAPTURE("5xx before capture"),
        ERROR_AFTER_CAPTURE("5xx after capture"),
        REFUSED("4xx"),
        LATE_CAPTURE("capture processed late"),
        LATE_DECLINE("decline processed late"),
        SLOW_DECLINE("decline, answered past the deadline");

        final String label;

        Call(String label) {
            this.label = label;
        }
    }

    /** One call's answer with its drawn numbers (status, delay, processing delay; 0 when unused). */
    record Fault(Call call, int status, int delayMillis, int processAfterMillis) {
        boolean faulty() {
            return call != Call.OK;
        }

        String describe() {
            return switch (call) {
                case OK, DECLINE, RESET_AFTER_CAPTURE, RESET_BEFORE_CAPTURE -> call.label;
                case SLOW_CAPTURE -> "capture, answered after " + delayMillis + " ms";
                case SLOW_DECLINE -> "decline, answered after " + delayMillis + " ms";
                case ERROR_BEFORE_CAPTURE, REFUSED -> status + " before capture";
                case ERROR_AFTER_CAPTURE -> status + " after capture";
                case LATE_CAPTURE, LATE_DECLINE -> call.label + " (" + processAfterMillis + " ms), answered after " + delayMillis + " ms";
            };
        }

        /** The WireMock response for this answer. */
        ObjectNode response() {
            return switch (call) {
                case OK -> Faults.ledgerAnswer(Map.of());
                case DECLINE -> Faults.ledgerAnswer(Map.of("decide", "decline"));
                case SLOW_CAPTURE -> Faults.ledgerAnswer(Map.of()).put("fixedDelayMilliseconds", delayMillis);
                case SLOW_DECLINE -> Faults.ledgerAnswer(Map.of("decide", "decline")).put("fixedDelayMilliseconds", delayMillis);
                case RESET_AFTER_CAPTURE -> Faults.ledgerAnswer(Map.of()).put("fault", "CONNECTION_RESET_BY_PEER");
                case RESET_BEFORE_CAPTURE -> Target.object().put("fault", "CONNECTION_RESET_BY_PEER");
                case ERROR_BEFORE_CAPTURE, REFUSED -> Faults.statusAnswer(status);
                case ERROR_AFTER_CAPTURE -> Faults.ledgerAnswer(Map.of("answerWith", status));
                case LATE_CAPTURE -> Faults.ledgerAnswer(Map.of("processAfterMillis", processAfterMillis))
                        .put("fixedDelayMilliseconds", delayMillis);
                case LATE_DECLINE -> Faults.ledgerAnswer(Map.of("decide", "decline", "processAfterMillis", processAfterMillis))
                        .put("fixedDelayMilliseconds", delayMillis);
            };
        }
    }

    /**
     * One buyer: its event (index), the seats it names or the quantity it asks for, the pause before
     * it arrives, and the answers to its first, second and every later payment call.
     */
    record Buyer(int index, int event, List<String> seats, int quantity, int gapMillis, Fault first, Fault second, Fault later) {
        boolean faulty() {
            return first.faulty() || second.faulty() || later.faulty();
        }

        String describePlan() {
            return "call 1 " + first.describe() + " · call 2 " + second.describe() + " · later " + later.describe();
        }

        String describeOrder() {
            return seats.isEmpty() ? quantity + " seat" + (quantity == 1 ? "" : "s") : "seats " + String.join(",", seats);
        }
    }

    /** What one status lookup (GET /payments?idempotencyKey=) gets. */
    enum Lookup {
        TRUTH("truthful"), ERROR("500"), RESET("reset"), SLOW("truthful after 3 s"), LIE("404 whatever the ledger says");

        final String label;

        Lookup(String label) {
            this.label = label;
        }

        ObjectNode response() {
            return switch (this) {
                case TRUTH -> Faults.ledgerAnswer(Map.of()).put("status", 200);
                case ERROR -> Faults.statusAnswer(500);
                case RESET -> Target.object().put("fault", "CONNECTION_RESET_BY_PEER");
                case SLOW -> Faults.ledgerAnswer(Map.of()).put("status", 200).put("fixedDelayMilliseconds", 3000);
                case LIE -> Faults.statusAnswer(404).put("body", "{\"error\":\"no payment with that idempotency key\"}");
            };
        }
    }

    enum Kind {
        KILL("kill -9 and restart"),
        UNREACHABLE("every outside service unreachable, connections refused"),
        UNREACHABLE_TIMING_OUT("every outside service unreachable, connections timing out"),
        REFUND_OUTAGE("refunds answer 503"),
        REFUND_REFUSAL("refunds answer 400 (permanent)"),
        EMAIL_OUTAGE("emails answer 503");

        final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    /** Something done to the system when buyer {@code atArrival} arrives ({@code buyers} = after the last). */
    record Action(int atArrival, Kind kind, int millis) {
        String describe() {
            return kind.label + (kind == Kind.KILL ? "" : " for " + millis + " ms") + " at arrival " + atArrival;
        }
    }

    final long seed;
    final int events;
    final List<Buyer> buyers;
    final List<Lookup> lookups;
    final List<Action> schedule;
    /** Window lengths (ms, 0 = none) taken in turn each time WireMock resets a connection. */
    final int[] afterReset;
    /** Whether the window after the n-th reset lets connections time out (else they are refused), taken in turn too. */
    final boolean[] afterResetTimesOut;

    private MoneyPlan(long seed, int events, List<Buyer> buyers, List<Lookup> lookups, List<Action> schedule, int[] afterReset,
                      boolean[] afterResetTimesOut) {
        this.seed = seed;
        this.events = events;
        this.buyers = buyers;
        this.lookups = lookups;
        this.schedule = schedule;
        this.afterReset = afterReset;
        this.afterResetTimesOut = afterResetTimesOut;
    }

    /**
     * The plan for {@code purchases} buyers. {@code longWindow}: one unreachable window of that length
     * near the end (to outlast {@code reconcile.give-up-after}), or null for none.
     */
    static MoneyPlan draw(long seed, int purchases, Duration longWindow) {
        SplittableRandom random = new SplittableRandom(seed);
        // About ten buyers per event of six seats: the last seats are fought over, yet most buyers reach the payment.
        int events = Math.max(3, purchases / 10);
        List<Buyer> buyers = new ArrayList<>();
        for (int i = 0; i < purchases; i++) {
            buyers.add(buyer(random, i, events));
        }
        // Half the providers lie now and then. A lie releases whatever it is asked about, which would also
        // end, by luck, a purchase that an honest "failed" leaves waiting forever: that must be seen too.
        int lies = random.nextInt(2) == 0 ? 10 : 0;
        List<Lookup> lookups = IntStream.range(0, 24).mapToObj(i -> pick(random, Map.of(
                Lookup.TRUTH, 76 - lies, Lookup.ERROR, 10, Lookup.RESET, 8, Lookup.SLOW, 6, Lookup.LIE, lies))).toList();

        List<Action> schedule = new ArrayList<>();
        int kills = 1 + random.nextInt(purchases / 75 + 1);
        for (int k = 0; k < kills; k++) {
            schedule.add(new Action(between(random, purchases * 15 / 100, purchases * 85 / 100), Kind.KILL, 0));
        }
        int windows = 2 + random.nextInt(purchases / 50 + 1);
        for (int w = 0; w < windows; w++) {
            schedule.add(new Action(between(random, purchases * 5 / 100, purchases * 95 / 100), Kind.UNREACHABLE, between(random, 100, 800)));
        }
        for (int o = 1 + random.nextInt(2); o > 0; o--) {
            schedule.add(new Action(random.nextInt(purchases), Kind.REFUND_OUTAGE, between(random, 500, 3000)));
        }
        for (int o = 1 + random.nextInt(2); o > 0; o--) {
            schedule.add(new Action(random.nextInt(purchases), Kind.EMAIL_OUTAGE, between(random, 500, 3000)));
        }
        if (random.nextInt(2) == 0) {
            schedule.add(new Action(random.nextInt(purchases), Kind.REFUND_REFUSAL, between(random, 1000, 3000)));
        }
        if (longWindow != null) {
            // After the last arrival, while the last purchases' payments are still being settled.
            schedule.add(new Action(purchases, Kind.UNREACHABLE, (int) longWindow.toMillis()));
        }
        int[] afterReset = IntStream.range(0, 32).map(i -> random.nextInt(2) == 0 ? 0 : between(random, 100, 300)).toArray();
        // Drawn last (see the class comment): connections that time out rather than being refused.
        int timingOut = 1 + random.nextInt(purchases / 50 + 1);
        for (int w = 0; w < timingOut; w++) {
            schedule.add(new Action(between(random, purchases * 5 / 100, purchases * 95 / 100), Kind.UNREACHABLE_TIMING_OUT,
                                    between(random, 100, 800)));
        }
        boolean[] afterResetTimesOut = new boolean[afterReset.length];
        for (int i = 0; i < afterResetTimesOut.length; i++) {
            afterResetTimesOut[i] = random.nextInt(2) == 0;
        }
        schedule.sort(Comparator.comparingInt(Action::atArrival));
        return new MoneyPlan(seed, events, List.copyOf(buyers), lookups, List.copyOf(schedule), afterReset, afterResetTimesOut);
    }

    private static Buyer buyer(SplittableRandom random, int index, int events) {
        int event = random.nextInt(events);
        List<String> seats = List.of();
        int quantity = 0;
        if (random.nextInt(100) < 45) {
            int count = random.nextInt(100) < 70 ? 1 : 2;
            if (random.nextInt(2) == 0) {
                // The last seats of the event, which many buyers name.
                seats = IntStream.rangeClosed(SEATS_PER_EVENT - count + 1, SEATS_PER_EVENT).mapToObj(n -> "A" + n).toList();
            } else {
                int from = 1 + random.nextInt(SEATS_PER_EVENT - count + 1);
                seats = IntStream.range(from, from + count).mapToObj(n -> "A" + n).toList();
            }
        } else {
            quantity = pick(random, Map.of(1, 60, 2, 30, 3, 10));
        }
        int gap = random.nextInt(80);
        Fault first = fault(random, Map.ofEntries(Map.entry(Call.OK, 45), Map.entry(Call.DECLINE, 6), Map.entry(Call.SLOW_CAPTURE, 8),
                                                  Map.entry(Call.RESET_AFTER_CAPTURE, 9), Map.entry(Call.RESET_BEFORE_CAPTURE, 6),
                                                  Map.entry(Call.ERROR_BEFORE_CAPTURE, 5), Map.entry(Call.ERROR_AFTER_CAPTURE, 5),
                                                  Map.entry(Call.REFUSED, 4), Map.entry(Call.LATE_CAPTURE, 6),
                                                  Map.entry(Call.LATE_DECLINE, 3), Map.entry(Call.SLOW_DECLINE, 3)));
        // The second call comes after a reset or a 5xx: this is where the compound faults are.
        Fault second = fault(random, Map.of(Call.OK, 43, Call.REFUSED, 15, Call.RESET_BEFORE_CAPTURE, 10,
                                            Call.ERROR_BEFORE_CAPTURE, 10, Call.RESET_AFTER_CAPTURE, 6, Call.SLOW_CAPTURE, 6,
                                            Call.DECLINE, 4, Call.LATE_CAPTURE, 4, Call.SLOW_DECLINE, 2));
        Fault later = fault(random, Map.of(Call.OK, 75, Call.ERROR_BEFORE_CAPTURE, 8, Call.RESET_BEFORE_CAPTURE, 7,
                                           Call.REFUSED, 5, Call.SLOW_CAPTURE, 5));
        return new Buyer(index, event, seats, quantity, gap, first, second, later);
    }

    private static Fault fault(SplittableRandom random, Map<Call, Integer> weights) {
        Call call = pick(random, weights);
        int status = switch (call) {
            case ERROR_BEFORE_CAPTURE, ERROR_AFTER_CAPTURE -> random.nextInt(2) == 0 ? 500 : 503;
            case REFUSED -> List.of(401, 404, 422).get(random.nextInt(3));
            default -> 0;
        };
        int delay = switch (call) {
            case SLOW_CAPTURE, SLOW_DECLINE, LATE_CAPTURE, LATE_DECLINE -> between(random, 1000, 1500);
            default -> 0;
        };
        int processAfter = call == Call.LATE_CAPTURE || call == Call.LATE_DECLINE ? between(random, 1500, LATEST_PROCESSING_MILLIS) : 0;
        return new Fault(call, status, delay, processAfter);
    }

    /**
     * A weighted choice. Map iteration order is not fixed, so the choices are walked in a sorted
     * order: the same seed must pick the same thing on every JVM.
     */
    private static <T extends Comparable<T>> T pick(SplittableRandom random, Map<T, Integer> weights) {
        List<T> choices = weights.keySet().stream().sorted().toList();
        int total = weights.values().stream().mapToInt(Integer::intValue).sum();
        int draw = random.nextInt(total);
        for (T choice : choices) {
            draw -= weights.get(choice);
            if (draw < 0) {
                return choice;
            }
        }
        throw new IllegalStateException("weights " + weights);
    }

    private static int between(SplittableRandom random, int lowest, int highest) {
        return highest <= lowest ? lowest : lowest + random.nextInt(highest - lowest + 1);
    }

    /** The schedule and the fault mix in a few lines, for the campaign's notes. */
    List<String> describe() {
        List<String> lines = new ArrayList<>();
        lines.add(buyers.size() + " buyers over " + events + " events of " + SEATS_PER_EVENT + " seats, "
                  + BUYERS_AT_ONCE + " arriving at a time; " + buyers.stream().filter(Buyer::faulty).count()
                  + " with a fault planned for a payment call");
        lines.add("payment call 1: " + mix(buyers.stream().map(Buyer::first).toList()));
        lines.add("payment call 2: " + mix(buyers.stream().map(Buyer::second).toList()));
        lines.add("lookups cycle through: " + lookups.stream().map(l -> l.label).collect(Collectors.joining(", ")));
        lines.add("schedule: " + schedule.stream().map(Action::describe).collect(Collectors.joining("; ")));
        long windows = IntStream.range(0, afterReset.length).filter(i -> afterReset[i] > 0).count();
        long timingOut = IntStream.range(0, afterReset.length).filter(i -> afterReset[i] > 0 && afterResetTimesOut[i]).count();
        lines.add("after a charge's connection is reset: a window in " + windows + " of every " + afterReset.length + " (100-300 ms; "
                  + timingOut + " of them with connections timing out, the rest refused)");
        return lines;
    }

    private static String mix(List<Fault> faults) {
        return faults.stream().collect(Collectors.groupingBy(f -> f.call().label, java.util.TreeMap::new, Collectors.counting()))
                .entrySet().stream().map(e -> e.getValue() + "× " + e.getKey()).collect(Collectors.joining(", "));
    }
}

package lastseat.web;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import lastseat.testkit.FreshPostgres;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.support.Leaks;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded fuzz of {@code POST /purchases} and {@code POST /events} against two real servers, one on H2 and
 * one on PostgreSQL, sent the same requests one by one: malformed and odd JSON, wrong types, NUL and other
 * control characters, unpaired surrogates and other Unicode oddities, huge strings, absurd quantities,
 * capacities and prices, unknown and duplicate fields, deep nesting, random and invalid bytes, odd headers.
 * Every answer: no 5xx; every 4xx is {@code application/problem+json} and shows nothing of the server's
 * insides ({@link Leaks}); a refused request (400, 404, 413, 415, and an event's 409) changes no row of
 * events, seats, purchases or idempotency keys; and both databases give the same status and problem type.
 * The first cases are fixed — each text field with a NUL, which PostgreSQL answered with a 500 — the rest
 * are drawn from the seed. Both servers then still hold I1–I3 for the events bought from.
 *
 * <p>A failure names its seed; {@code -Dlastseat.fuzz.seed=<seed>} or {@code LASTSEAT_FUZZ_SEED=<seed>}
 * replays the run. Skipped loudly without PostgreSQL, failed under {@code LASTSEAT_REQUIRE_POSTGRES=1}
 * ({@link FreshPostgres}).
 *
 * <p>Hazard: the pieces odd text is made of ({@link #PIECES}) must not spell a word of {@link Leaks#DENIED},
 * or an honest echo of a request ("There is no event …") would read as a leak.
 */
class FuzzTest {
    private static final int PURCHASES = 220;
    private static final int EVENTS = 110;
    /** An event with named seats, and one bought from by quantity; both servers get them with these ids. */
    private static final String SEATS_EVENT = "fuzz-seats";
    private static final String MANY_EVENT = "fuzz-many";
    /** Statuses of a request refused before anything was written; a 409 too for an event (its id is taken). */
    private static final Set<Integer> REFUSED = Set.of(400, 404, 413, 415);

    // The database first: JUnit starts extensions in this order and closes them in reverse.
    @RegisterExtension
    @Order(1)
    static final FreshPostgres postgres = new FreshPostgres("lastseat_fuzz_");

    // A deadline no slow moment of two busy cores reaches: a 503 or 504 here would be the machine, not the input.
    private static final Map<String, String> UNHURRIED = Map.of("purchase.deadline", "5s", "payment.max-wait", "2s");

    @RegisterExtension
    @Order(2)
    static final LastseatApp h2 = LastseatApp.with(UNHURRIED);

    @RegisterExtension
    @Order(3)
    static final LastseatApp pg = LastseatApp.with(merged(UNHURRIED, postgres.settings()));

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    /** What odd text is made of; no join of them spells a word of {@link Leaks#DENIED}. */
    private static final List<String> PIECES = List.of(
            "A1", "a", "Z9", "ada", "x@y.z", "tok_ok", "-", "_", " ", "0", "é", "Ω", "山", "\ud83c\udf9f", "\u0000", "\t", "\n",
            "\u001f", "\u007f", "\u0085", "\u200b", "\u202e", "\ufeff", "\uffff", "\ufffd", "'", "\"", "\\", "{", "}", "[", "<",
            "%00", "..", "/", SEATS_EVENT, MANY_EVENT);

    /** One request of the run, and what it is, for the failure's message. */
    private record Case(String method, String path, Map<String, String> headers, byte[] body, String what) {
        @Override
        public String toString() {
            String shown = new String(body, StandardCharsets.UTF_8);
            shown = shown.length() > 300 ? shown.substring(0, 300) + "… (" + body.length + " bytes)" : shown;
            return what + ": " + method + " " + path + " " + headers + " " + JSON.valueToTree(shown);
        }
    }

    /** What a refused request must leave as it was. */
    private record Rows(long events, long seats, long purchases, long keys) {
        static Rows of(LastseatApp app) {
            return new Rows(app.db().count("SELECT COUNT(*) FROM events"), app.db().count("SELECT COUNT(*) FROM seats"),
                            app.db().count("SELECT COUNT(*) FROM purchases"), app.db().count("SELECT COUNT(*) FROM idempotency_keys"));
        }
    }

    /**
     * The operator's data routes take ids from the path too: one no row can have (a NUL, too long) is 404
     * on both databases, never PostgreSQL's refusal of the query as a 500.
     */
    @Test
    void anIdNoRowCanHaveInAnOperatorsPathIs404OnBothDatabases() {
        List<String> wrong = new ArrayList<>();
        for (LastseatApp app : List.of(h2, pg)) {
            lastseat.testkit.Instance at = app.client().instance();
            for (String path : List.of("/ops/api/events/x%00y/seats", "/ops/api/events/" + "e".repeat(65) + "/seats",
                                       "/ops/api/events/no-such-event/seats", "/ops/api/purchases/x%00y",
                                       "/ops/api/purchases/" + "p".repeat(37))) {
                Answer answer = app.client().send("GET", at.admin(), path, at.operatorKey(), null, null);
                if (answer.status() != 404 || !"application/problem+json".equals(answer.header("Content-Type"))
                    || !answer.json().path("detail").asText().endsWith("with that id")) {
                    wrong.add((app == h2 ? "H2 " : "PostgreSQL ") + path + ": " + answer.status() + " " + answer.body());
                }
            }
            Invariants.resourcesCameBack(app);
        }
        assertThat(wrong).isEmpty();
    }

    @Test
    void oddRequestsGetTheSameHonestRefusalOnBothDatabasesAndChangeNothing() {
        long seed = seed();
        System.out.println("FuzzTest seed " + seed);
        for (LastseatApp app : List.of(h2, pg)) {
            create(app, "{\"id\":\"" + SEATS_EVENT + "\",\"name\":\"Fuzz\",\"seats\":[\"A1\",\"A2\",\"A3\",\"A4\",\"A5\"],"
                        + "\"price\":\"40.00\",\"currency\":\"EUR\"}");
            create(app, "{\"id\":\"" + MANY_EVENT + "\",\"name\":\"Fuzz\",\"capacity\":40,\"price\":\"12.50\",\"currency\":\"EUR\"}");
        }
        Random random = new Random(seed);
        List<Case> cases = new ArrayList<>(fixedCases(seed));
        int fixed = cases.size();
        for (int i = 0; i < PURCHASES; i++) {
            cases.add(purchase(random, "fuzz-" + seed + "-p" + i));
        }
        for (int i = 0; i < EVENTS; i++) {
            cases.add(event(random, i));
        }
        Collections.shuffle(cases.subList(fixed, cases.size()), random);

        for (int i = 0; i < cases.size(); i++) {
            Case request = cases.get(i);
            try {
                Answer onH2 = sent(h2, "H2", request);
                Answer onPg = sent(pg, "PostgreSQL", request);
                assertThat(onPg.status()).as("the same status on both: H2 %s, PostgreSQL %s", onH2, onPg).isEqualTo(onH2.status());
                assertThat(onPg.type()).as("the same problem on both: H2 %s, PostgreSQL %s", onH2, onPg).isEqualTo(onH2.type());
            } catch (AssertionError e) {
                String replay = "FuzzTest seed " + seed + " (replay with -Dlastseat.fuzz.seed=" + seed + "), case " + i + " of "
                                + cases.size() + ": " + request;
                System.err.println("*** " + replay);
                throw new AssertionError(replay + "\n" + e.getMessage(), e);
            }
        }
        for (LastseatApp app : List.of(h2, pg)) {
            Invariants.hold(app, SEATS_EVENT);
            Invariants.hold(app, MANY_EVENT);
            Invariants.resourcesCameBack(app);
        }
    }

    /** Sends {@code request} to {@code app} and checks what every answer must be. */
    private static Answer sent(LastseatApp app, String database, Case request) {
        Rows before = Rows.of(app);
        Answer answer = request.method().equals("GET") ? app.client().get(request.path())
                : app.client().post(request.path(), request.headers(), request.body());
        String what = database + " answered " + answer;
        assertThat(answer.status()).as("no 5xx: %s", what).isLessThan(500);
        if (answer.status() >= 400) {
            assertThat(answer.header("Content-Type")).as("a problem: %s", what).isEqualTo("application/problem+json");
            Leaks.none(what, answer.body());
            assertThat(answer.json().path("status").asInt()).as(what).isEqualTo(answer.status());
            assertThat(answer.json().path("detail").asText()).as(what).isNotBlank();
        }
        boolean refused = REFUSED.contains(answer.status()) || (answer.status() == 409 && request.path().equals("/events"));
        if (refused) {
            assertThat(Rows.of(app)).as("a refused request changes nothing: %s", what).isEqualTo(before);
        }
        return answer;
    }

    // --- the fixed cases ---

    private static List<Case> fixedCases(long seed) {
        List<Case> cases = new ArrayList<>();
        String nul = "x\\u0000";
        String lone = "x\\ud800";
        for (String field : List.of("eventId", "seat", "buyer.id", "buyer.email", "paymentToken")) {
            for (String odd : List.of(nul, lone)) {
                String body = "{\"eventId\":\"" + (field.equals("eventId") ? odd : SEATS_EVENT) + "\","
                              + "\"seats\":[\"" + (field.equals("seat") ? odd : "A1") + "\"],"
                              + "\"buyer\":{\"id\":\"" + (field.equals("buyer.id") ? odd : "ada") + "\","
                              + "\"email\":\"" + (field.equals("buyer.email") ? odd + "@example.com" : "ada@example.com") + "\"},"
                              + "\"paymentToken\":\"" + (field.equals("paymentToken") ? odd : "tok_ok") + "\"}";
                cases.add(new Case("POST", "/purchases", purchaseHeaders("fuzz-" + seed + "-fixed-" + cases.size()),
                                   body.getBytes(StandardCharsets.UTF_8), odd + " in " + field));
            }
        }
        for (String field : List.of("id", "name", "seat", "currency")) {
            for (String odd : List.of(nul, lone)) {
                String body = "{" + (field.equals("id") ? "\"id\":\"" + odd + "\"," : "")
                              + "\"name\":\"" + (field.equals("name") ? odd : "Fuzz") + "\","
                              + "\"seats\":[\"" + (field.equals("seat") ? odd : "A1") + "\"],\"price\":\"1.00\","
                              + "\"currency\":\"" + (field.equals("currency") ? "EU\\u0000" : "EUR") + "\"}";
                cases.add(new Case("POST", "/events", Map.of("Content-Type", "application/json"),
                                   body.getBytes(StandardCharsets.UTF_8), odd + " in the event's " + field));
            }
        }
        cases.add(new Case("POST", "/purchases", purchaseHeaders("fuzz-" + seed + "-fixed-emoji"),
                           ("{\"eventId\":\"fuzz-\ud83c\udf9f\",\"quantity\":1,\"buyer\":{\"id\":\"ada\",\"email\":\"ada@example.com\"},"
                            + "\"paymentToken\":\"tok_ok\"}").getBytes(StandardCharsets.UTF_8), "an eventId no event has"));
        for (String path : List.of("/events/x%00y", "/purchases/x%00y", "/events/" + "e".repeat(65), "/purchases/%F0%9F%8E%9F")) {
            cases.add(new Case("GET", path, Map.of(), new byte[0], "an id no row can have in the path"));
        }
        return cases;
    }

    // --- purchases ---

    private static Case purchase(Random random, String key) {
        ObjectNode body = NODES.objectNode();
        body.put("eventId", random.nextInt(10) == 0 ? "no-such-event" : random.nextBoolean() ? SEATS_EVENT : MANY_EVENT);
        if (random.nextInt(3) == 0) {
            // Never one seat: a buyer of one starts at a random free seat (Inventory), so the servers would sell different ones.
            body.put("quantity", 2 + random.nextInt(2));
        } else {
            ArrayNode seats = body.putArray("seats");
            for (int i = 0, n = 1 + random.nextInt(3); i < n; i++) {
                seats.add(random.nextBoolean() ? "A" + (1 + random.nextInt(6)) : Integer.toString(1 + random.nextInt(41)));
            }
        }
        ObjectNode buyer = body.putObject("buyer");
        buyer.put("id", pick(random, "ada", "bob", "fraudster", "山田"));
        buyer.put("email", pick(random, "ada@example.com", "bob@example.com"));
        body.put("paymentToken", pick(random, "tok_ok", "tok_ok", "tok_declined", "tok-" + random.nextInt(1000)));
        List<String> mutations = new ArrayList<>();
        mutateTree(random, body, List.of("eventId", "seats", "seats.0", "quantity", "buyer", "buyer.id", "buyer.email", "paymentToken"),
                   mutations);
        return new Case("POST", "/purchases", headers(random, purchaseHeaders(key), mutations), bytes(random, body, mutations),
                        "a purchase " + mutations);
    }

    private static Map<String, String> purchaseHeaders(String key) {
        return Map.of("Content-Type", "application/json", "Idempotency-Key", key);
    }

    // --- events ---

    private static Case event(Random random, int index) {
        ObjectNode body = NODES.objectNode();
        switch (random.nextInt(4)) {
            case 0 -> body.put("id", "fz-" + index + "-" + Long.toHexString(random.nextLong() & 0xffffff));
            case 1 -> body.put("id", SEATS_EVENT);
            default -> {
                // No id: a new UUID on each server.
            }
        }
        body.put("name", pick(random, "Concert", "Salon \ud83c\udf9f", "Study room 3", "Zoë"));
        if (random.nextBoolean()) {
            body.put("capacity", 1 + random.nextInt(20));
        } else {
            ArrayNode seats = body.putArray("seats");
            for (int i = 0, n = 1 + random.nextInt(8); i < n; i++) {
                seats.add("S" + (i + 1));
            }
        }
        if (random.nextBoolean()) {
            body.put("price", pick(random, "40.00", "0", "999999.99", "12.5"));
        } else {
            body.put("price", new BigDecimal(pick(random, "40", "0.5", "100.25")));
        }
        body.put("currency", pick(random, "EUR", "USD"));
        List<String> mutations = new ArrayList<>();
        mutateTree(random, body, List.of("id", "name", "seats", "seats.0", "capacity", "price", "currency"), mutations);
        return new Case("POST", "/events", headers(random, Map.of("Content-Type", "application/json"), mutations),
                        bytes(random, body, mutations), "an event " + mutations);
    }

    // --- mutations ---

    /** None to three changes of the body's fields: odd values, fields taken out, unknown fields added. */
    private static void mutateTree(Random random, ObjectNode body, List<String> fields, List<String> mutations) {
        for (int i = 0, n = random.nextInt(4); i < n; i++) {
            String field = fields.get(random.nextInt(fields.size()));
            switch (random.nextInt(6)) {
                case 0 -> {
                    remove(body, field);
                    mutations.add("without " + field);
                }
                case 1 -> {
                    String name = random.nextBoolean() ? pick(random, "discount", "vip", "Quantity", "seat", "__proto__")
                                                       : oddString(random, 1 + random.nextInt(6));
                    body.set(name, oddValue(random));
                    mutations.add("an unknown field");
                }
                default -> {
                    if (set(body, field, oddValue(random))) {
                        mutations.add("odd " + field);
                    }
                }
            }
        }
    }

    private static void remove(ObjectNode body, String field) {
        String[] parts = field.split("\\.");
        JsonNode parent = parts.length == 1 ? body : body.get(parts[0]);
        if (parent instanceof ObjectNode object) {
            object.remove(parts[parts.length - 1]);
        } else if (parent instanceof ArrayNode array && !array.isEmpty()) {
            array.remove(0);
        }
    }

    /** Sets {@code field} (a path like {@code buyer.id} or {@code seats.0}) where its parent still is what it was. */
    private static boolean set(ObjectNode body, String field, JsonNode value) {
        String[] parts = field.split("\\.");
        if (parts.length == 1) {
            body.set(field, value);
            return true;
        }
        JsonNode parent = body.get(parts[0]);
        if (parent instanceof ObjectNode object) {
            object.set(parts[1], value);
            return true;
        }
        if (parent instanceof ArrayNode array && !array.isEmpty()) {
            array.set(0, value);
            return true;
        }
        return false;
    }

    private static JsonNode oddValue(Random random) {
        return switch (random.nextInt(12)) {
            case 0, 1 -> NODES.textNode(oddString(random, 1 + random.nextInt(8)));
            case 2 -> NODES.textNode("x".repeat(pick(random, 17, 65, 101, 201, 255, 256, 300, 5_000, 12_000)));
            // Not 1: a quantity of one would be sold a random seat (see purchase()).
            case 3 -> NODES.numberNode(pick(random, -1, 0, 2, 5, 10, 11, 40, 41, 10_000, 10_001, Integer.MAX_VALUE, Integer.MIN_VALUE));
            case 4 -> NODES.numberNode(pick(random, 2_147_483_648L, -2_147_483_649L, Long.MAX_VALUE, Long.MIN_VALUE));
            case 5 -> NODES.numberNode(new BigDecimal(pick(random, "1.5", "-0.0", "1e309", "1e-309", "0.001", "999999.995",
                                                            "1000000", "-40.00", "1E+3", "1e-2147483647")));
            case 6 -> NODES.numberNode(new BigInteger("9".repeat(pick(random, 20, 39, 41, 60))));
            case 7 -> NODES.booleanNode(random.nextBoolean());
            case 8 -> NODES.nullNode();
            case 9 -> {
                ArrayNode array = NODES.arrayNode();
                for (int i = 0, n = random.nextInt(4); i < n; i++) {
                    array.add(random.nextBoolean() ? NODES.textNode(oddString(random, 2)) : NODES.numberNode(random.nextInt(100) - 50));
                }
                yield array;
            }
            case 10 -> {
                JsonNode deep = NODES.textNode("A1");
                for (int i = 0, depth = pick(random, 2, 31, 33, 100); i < depth; i++) {
                    deep = random.nextBoolean() ? NODES.arrayNode().add(deep) : NODES.objectNode().set("id", deep);
                }
                yield deep;
            }
            default -> NODES.textNode(pick(random, "A1", "A2", "1", SEATS_EVENT, MANY_EVENT, "ada", "tok_ok", "tok_declined",
                                           "fraudster", "ada@example.com", "EUR", "40.00", "", " "));
        };
    }

    private static String oddString(Random random, int pieces) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < pieces; i++) {
            text.append(PIECES.get(random.nextInt(PIECES.size())));
        }
        return text.toString();
    }

    /** The body's bytes, sometimes changed as text or as bytes on the way: JSON broken, escapes odd, UTF-8 invalid, too large. */
    private static byte[] bytes(Random random, ObjectNode body, List<String> mutations) {
        String text;
        try {
            text = JSON.writeValueAsString(body);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        switch (random.nextInt(16)) {
            case 0 -> {
                text = text.replaceFirst("\\{", "{\"" + (text.contains("\"eventId\"") ? "eventId" : "name") + "\":\"dup\",");
                mutations.add("a field given twice");
            }
            case 1 -> {
                text = text.substring(0, random.nextInt(text.length()));
                mutations.add("cut short");
            }
            case 2 -> {
                int at = random.nextInt(text.length());
                text = text.substring(0, at) + pick(random, "{", "}", "[", "]", "\"", ":", ",", "0", "a", "\\", " ", "\u0000", "\ufeff")
                       + text.substring(at + (random.nextBoolean() ? 1 : 0));
                mutations.add("a character changed");
            }
            case 3 -> {
                int at = text.indexOf("\":\"");
                if (at > 0) {
                    text = text.substring(0, at + 3) + pick(random, "\\ud800", "\\udfff", "\\ud83c", "\\u0000", "\\u001b", "\\uZZ")
                           + text.substring(at + 3);
                    mutations.add("an odd escape");
                }
            }
            case 4 -> {
                text = text + pick(random, " {}", "x", "]", "\u0000", "\n\n", ",");
                mutations.add("something after the object");
            }
            case 5 -> {
                text = pick(random, "[" + text + "]", "\ufeff" + text, "\"" + text.replace("\"", "'") + "\"", "null", "", "  ");
                mutations.add("not an object");
            }
            default -> {
            }
        }
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        switch (random.nextInt(14)) {
            case 0 -> {
                bytes = new byte[1 + random.nextInt(400)];
                random.nextBytes(bytes);
                mutations.add("random bytes " + HexFormat.of().formatHex(bytes, 0, Math.min(8, bytes.length)));
            }
            case 1 -> {
                int at = bytes.length == 0 ? 0 : random.nextInt(bytes.length);
                byte[] bad = pick(random, new byte[] {(byte) 0xC3, 0x28}, new byte[] {(byte) 0xFF}, new byte[] {(byte) 0xC0, (byte) 0x80},
                                  new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}, new byte[] {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80});
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                out.write(bytes, 0, at);
                out.writeBytes(bad);
                out.write(bytes, at, bytes.length - at);
                bytes = out.toByteArray();
                mutations.add("invalid UTF-8");
            }
            case 2 -> {
                // Past a purchase's 16 KiB limit (413). Not past an event's 1 MiB: the server answers 413 before it
                // has read the body and closes, and a client still sending that much reads a broken connection.
                // A body the text mutations already made longer stays whole: it is past the limit as it is.
                int size = Math.max(20_000, bytes.length);
                byte[] padded = new byte[size];
                java.util.Arrays.fill(padded, (byte) ' ');
                System.arraycopy(bytes, 0, padded, 0, bytes.length);
                bytes = padded;
                mutations.add("padded to " + size + " bytes");
            }
            default -> {
            }
        }
        return bytes;
    }

    /** The headers, sometimes without a content type or key, or with an odd one. */
    private static Map<String, String> headers(Random random, Map<String, String> usual, List<String> mutations) {
        Map<String, String> headers = new LinkedHashMap<>(usual);
        switch (random.nextInt(20)) {
            case 0 -> {
                headers.remove("Content-Type");
                mutations.add("no Content-Type");
            }
            case 1 -> {
                headers.put("Content-Type", pick(random, "text/plain", "application/xml", "application/x-www-form-urlencoded"));
                mutations.add("another Content-Type");
            }
            case 2 -> {
                headers.put("Content-Type", "application/json; charset=utf-8");
                mutations.add("a charset");
            }
            case 3 -> {
                if (headers.remove("Idempotency-Key") != null) {
                    mutations.add("no Idempotency-Key");
                }
            }
            case 4 -> {
                if (headers.containsKey("Idempotency-Key")) {
                    headers.put("Idempotency-Key", pick(random, "a b", "k".repeat(256), "", "\t"));
                    mutations.add("an odd Idempotency-Key");
                }
            }
            default -> {
            }
        }
        return headers;
    }

    // --- plumbing ---

    private static long seed() {
        String given = System.getProperty("lastseat.fuzz.seed", System.getenv("LASTSEAT_FUZZ_SEED"));
        return given == null || given.isBlank() ? new Random().nextLong() : Long.parseLong(given.trim());
    }

    private static void create(LastseatApp app, String body) {
        Answer answer = app.client().post("/events", null, body);
        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
    }

    @SafeVarargs
    private static <T> T pick(Random random, T... choices) {
        return choices[random.nextInt(choices.length)];
    }

    private static Map<String, String> merged(Map<String, String> first, Map<String, String> second) {
        Map<String, String> merged = new HashMap<>(first);
        merged.putAll(second);
        return merged;
    }
}

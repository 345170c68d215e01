package lastseat.access;

import com.fasterxml.jackson.databind.JsonNode;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.web.Bodies;
import lastseat.web.Json;
import lastseat.web.Problem;
import lastseat.web.Reply;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * {@code /admin/clients} on the admin port, for the operator: make a client key ({@code POST}, the key is
 * in that answer and nowhere else ever after), list the keys ({@code GET}), change a client's limit on
 * purchases in flight ({@code PATCH /{name}}), read one ({@code GET /{name}}), revoke one
 * ({@code DELETE /{name}}, refused by the next request to any instance).
 *
 * <p>Contract: a name is 1-64 of {@code a-z 0-9 . _ -}, starting with a letter or digit, and is never
 * reused (a revoked key keeps it). Only client keys are made, changed and revoked here; the operator's
 * key comes from the configuration ({@code access.operator-key}).
 */
public final class AdminRoutes implements HttpService {
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
    private static final int MAX_BODY_BYTES = 4096;
    /** The largest per-client limit; beyond it, leave the limit out (no limit of its own). */
    static final int MAX_LIMIT = 100_000;

    private final ApiKeys keys;

    public AdminRoutes(ApiKeys keys) {
        this.keys = keys;
    }

    /** {@code POST /admin/clients}. */
    record NewClient(String name, Integer maxInFlight) {
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post("/clients", this::create)
             .get("/clients", this::list)
             .get("/clients/{name}", this::one)
             .patch("/clients/{name}", this::limit)
             .delete("/clients/{name}", this::revoke);
    }

    private void create(ServerRequest request, ServerResponse response) {
        Bodies.requireJson(request);
        NewClient client = Json.read(Bodies.read(request, MAX_BODY_BYTES), NewClient.class);
        String name = name(client.name());
        OptionalInt limit = limit(client.maxInFlight());
        switch (keys.create(name, Role.CLIENT, limit)) {
            case ApiKeys.Made.Created created -> {
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("name", created.name());
                body.put("role", created.role().column());
                body.put("maxInFlight", created.maxInFlight().isPresent() ? created.maxInFlight().getAsInt() : null);
                body.put("key", created.key());
                Reply.json(201, body, "/admin/clients/" + created.name()).send(response);
            }
            case ApiKeys.Made.NameTaken taken -> throw new Problem(409, "client-exists", "Client exists",
                    "A key named " + taken.name() + " exists or existed; names are not reused");
        }
    }

    private void list(ServerRequest request, ServerResponse response) {
        Reply.json(200, Map.of("items", keys.list().stream().map(AdminRoutes::shown).toList()), null).send(response);
    }

    private void one(ServerRequest request, ServerResponse response) {
        String name = name(request.path().pathParameters().get("name"));
        Reply.json(200, shown(keys.find(name).orElseThrow(() -> Problem.notFound("unknown-client",
                "There is no key named " + name))), null).send(response);
    }

    /**
     * {@code {"maxInFlight": n}} or {@code {"maxInFlight": null}} (no limit of its own): the field must be
     * there, so that an empty body cannot lift a limit by accident.
     */
    private void limit(ServerRequest request, ServerResponse response) {
        String name = name(request.path().pathParameters().get("name"));
        Bodies.requireJson(request);
        JsonNode body = Json.read(Bodies.read(request, MAX_BODY_BYTES), JsonNode.class);
        if (!body.isObject()) {
            throw Problem.badRequest("malformed-json", "The request body must be a JSON object: {\"maxInFlight\": 5} or {\"maxInFlight\": null}");
        }
        for (String field : (Iterable<String>) body::fieldNames) {
            if (!field.equals("maxInFlight")) {
                throw Problem.badRequest("unknown-field", "Unknown field '" + (field.length() <= 40 ? field : field.substring(0, 40)) + "'");
            }
        }
        JsonNode given = body.get("maxInFlight");
        if (given == null) {
            throw Problem.badRequest("invalid-limit", "Give maxInFlight: a number from 1 to " + MAX_LIMIT + ", or null for no limit");
        }
        if (!given.isNull() && !(given.isIntegralNumber() && given.canConvertToInt())) {
            throw Problem.badRequest("invalid-limit", "maxInFlight must be a whole number from 1 to " + MAX_LIMIT + ", or null for no limit");
        }
        OptionalInt limit = given.isNull() ? OptionalInt.empty() : limit(given.intValue());
        if (!keys.limit(name, limit)) {
            throw unknown(name);
        }
        Reply.json(200, shown(keys.find(name).orElseThrow(() -> unknown(name))), null).send(response);
    }

    private void revoke(ServerRequest request, ServerResponse response) {
        String name = name(request.path().pathParameters().get("name"));
        boolean client = keys.find(name).map(k -> k.role() == Role.CLIENT).orElse(false);
        if (!client || !keys.revoke(name)) {
            throw unknown(name);
        }
        Reply.json(200, shown(keys.find(name).orElseThrow(() -> unknown(name))), null).send(response);
    }

    /** A key as listed: never the key itself, which is not kept. */
    record Shown(String name, String role, Integer maxInFlight, String createdAt, boolean revoked) {
    }

    private static Shown shown(ApiKeys.Listed key) {
        return new Shown(key.name(), key.role().column(), key.maxInFlight().isPresent() ? key.maxInFlight().getAsInt() : null,
                         key.createdAt(), key.revoked());
    }

    private static String name(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw Problem.badRequest("invalid-client-name",
                    "A client name is 1-64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit");
        }
        return name;
    }

    private static OptionalInt limit(Integer maxInFlight) {
        if (maxInFlight == null) {
            return OptionalInt.empty();
        }
        if (maxInFlight < 1 || maxInFlight > MAX_LIMIT) {
            throw Problem.badRequest("invalid-limit", "maxInFlight must be between 1 and " + MAX_LIMIT + ", or left out for no limit");
        }
        return OptionalInt.of(maxInFlight);
    }

    private static Problem unknown(String name) {
        return Problem.notFound("unknown-client", "There is no client key named " + name + " in use");
    }

}

package lastseat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.http.Method;
import io.helidon.webserver.http.Handler;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import lastseat.access.AccessFilter;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.yaml.snakeyaml.Yaml;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The OpenAPI document at {@code GET /openapi} ({@code META-INF/openapi.yaml}) and the code agree, both ways:
 * a route added without being described, an operation described that is not served, a role that differs from
 * {@link AccessFilter}'s table, or a problem kind the code can answer that the document does not list (or one
 * it lists that the code cannot answer) fails here.
 *
 * <p>How each side is read, and why:
 * <ul>
 * <li><b>The routes served</b> are recorded, not listed by hand: {@link Main#publicRoutes} (what the public port
 * registers) is run against a recording {@link HttpRules}, which walks every service's own
 * {@code routing(HttpRules)}; the OpenAPI feature adds {@code GET} at its web context. A hand-kept list would
 * drift exactly when someone forgets, which is the case to catch. The recorder knows the calls lastseat makes
 * ({@code register}, {@code get/post/...(path, handler)}, {@code route(method, path, ...)}) and fails on any
 * other, so a new way of adding a route cannot slip past it unseen.</li>
 * <li><b>The operations are probed</b> on a real server, with the key their security names and a harmless
 * request (an empty or invalid body, an id that does not exist): each must be routed (not 404 {@code
 * not-found}), let through (not 401 or 403), and answer a status, and a problem kind, that the document lists
 * for it. This catches a path template that reads well but is not what Helidon matches.</li>
 * <li><b>The problem kinds</b> are read from the sources under {@code src/main/java}: every {@code new
 * Problem(status, "kind", ...)}, {@code Problem.badRequest("kind", ...)} and {@code Problem.notFound("kind", ...)}
 * (every problem is one of these, made into its answer by {@code web.Edge}). A kind the scan cannot read (a
 * {@code new Problem} whose kind is not a string literal) must be one of the few known forwarders below, or
 * the test fails and asks to be taught: that is what keeps the scan from going blind as the code grows. Kinds
 * found only in the admin port's routes ({@link #ADMIN_ONLY}) are not the public API's and must not be in the
 * document. A scan, rather than a central list of kinds, because a list is one more thing to forget; the price
 * is that the scan reads code as text, which is why it refuses what it does not understand.</li>
 * </ul>
 *
 * <p>The document's catalogue of problems is {@code components/examples}: one example per kind (and status),
 * whose value is the problem as sent. Every problem an operation lists is a {@code $ref} into it, under the
 * status the problem has. The document itself must be valid OpenAPI to a parser (swagger-parser: it catches a
 * misspelt field, not every schema mistake), be served as the file in the sources, and have no {@code $ref}
 * that leads nowhere.
 *
 * <p>Hazard: the probes must change nothing; they send only requests that are refused for their input, and the
 * test checks the database's counts are as they were.
 */
class OpenApiTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROBLEM = "urn:lastseat:problem:";
    private static final String PROBLEM_JSON = "application/problem+json";
    private static final String EXAMPLES = "#/components/examples/";
    private static final Set<String> HTTP_METHODS = Set.of("get", "put", "post", "delete", "options", "head", "patch", "trace");

    /** The sources of the admin port's routes only (registered by {@link Main#adminRouting}): their kinds are not public. */
    private static final Set<String> ADMIN_ONLY = Set.of("lastseat/access/AdminRoutes.java", "lastseat/outbox/OutboxRoutes.java",
                                                         "lastseat/drill/DrillRoutes.java",
                                                         "lastseat/ops/OpsRoutes.java");

    /**
     * The kinds no operation lists, because they come before any route runs: Helidon's answers to a request
     * it could not read as HTTP, on any path (Main's transport handler).
     */
    private static final Set<String> ON_NO_ROUTE = Set.of("bad-request", "uri-too-long", "headers-too-large");

    private static JsonNode doc;

    @BeforeAll
    static void theDocumentAsServed() {
        Answer json = app.client().send("GET", app.client().instance().api(), "/openapi?format=JSON", null, null, null);
        assertThat(json.status()).as(json.toString()).isEqualTo(200);
        doc = json.json();
    }

    // --- the routes ---

    @Test
    void theDocumentDescribesExactlyTheRoutesThePublicPortRegisters() {
        Recorded served = recorded();

        assertThat(served.routes()).as("the recorder saw the public routes").isNotEmpty();
        assertThat(operations().stream().map(Operation::route).toList())
                .as("operations in the document (left) against routes the code registers; a route added must be "
                    + "described in META-INF/openapi.yaml, an operation described must be served")
                .containsExactlyInAnyOrderElementsOf(served.routes());
        assertThat(served.services()).as("the public routes come from no source of the admin port's")
                .allSatisfy(service -> assertThat(ADMIN_ONLY).doesNotContain(sourceOf(service)));
        Invariants.resourcesCameBack(app);
    }

    @Test
    void everyOperationIsServedAndAnswersOnlyWhatTheDocumentListsForIt() {
        Instance at = app.client().instance();
        long purchases = app.db().count("SELECT COUNT(*) FROM purchases");
        long events = app.db().count("SELECT COUNT(*) FROM events");
        long keys = app.db().count("SELECT COUNT(*) FROM idempotency_keys");
        List<String> wrong = new ArrayList<>();

        for (Operation op : operations()) {
            String path = op.path().replaceAll("\\{[^}]+}", "no-such-id-" + op.method().toLowerCase());
            String key = switch (need(op)) {
                case ANYONE -> null;
                case CLIENT, CLIENT_OR_OPERATOR -> at.clientKey();
                case OPERATOR -> at.operatorKey();
            };
            // Refused for its input: an empty JSON object, no Idempotency-Key, no query.
            String body = op.method().equals("POST") && op.node().has("requestBody") ? "{}" : null;
            Answer answer = app.client().send(op.method(), at.api(), path, key, null, body);
            if (answer.status() == 404 && answer.type().equals("not-found") || answer.status() == 405) {
                wrong.add(op + " is not served: " + answer);
            } else if (answer.status() == 401 || answer.status() == 403) {
                wrong.add(op + " refused the key its security names: " + answer);
            } else {
                undocumented(op, answer).ifPresent(wrong::add);
            }
            if (need(op) != AccessFilter.Need.ANYONE) {
                Answer keyless = app.client().send(op.method(), at.api(), path, null, null, body);
                if (keyless.status() != 401) {
                    wrong.add(op + " without a key: " + keyless);
                }
                undocumented(op, keyless).ifPresent(wrong::add);
            }
        }

        assertThat(wrong).as("operations served otherwise than the document says").isEmpty();
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases")).as("no purchase made").isEqualTo(purchases);
        assertThat(app.db().count("SELECT COUNT(*) FROM events")).as("no event made").isEqualTo(events);
        assertThat(app.db().count("SELECT COUNT(*) FROM idempotency_keys")).as("no key claimed").isEqualTo(keys);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void eachOperationAsksForTheKeyTheAccessTableAsksFor() {
        List<String> wrong = new ArrayList<>();
        for (Operation op : operations()) {
            assertThat(op.node().has("security")).as(op + " states its security (no document-wide default)").isTrue();
            String path = op.path().replaceAll("\\{[^}]+}", "x");
            AccessFilter.Need table = AccessFilter.need(AccessFilter.Socket.PUBLIC, method(op.method()), path);
            if (table != need(op)) {
                wrong.add(op + ": the document says " + need(op) + ", AccessFilter's table " + table);
            }
        }
        assertThat(wrong).isEmpty();
        assertThat(doc.at("/components/securitySchemes/bearer/type").asText()).isEqualTo("http");
        assertThat(doc.at("/components/securitySchemes/bearer/scheme").asText()).isEqualTo("bearer");
        Invariants.resourcesCameBack(app);
    }

    // --- the problems ---

    @Test
    void everyProblemKindThePublicPortCanAnswerIsInTheCatalogueWithItsStatusAndNoOther() {
        Map<String, Set<Integer>> catalogue = catalogue();
        Kinds code = kindsInTheSources();

        assertThat(catalogue.keySet())
                .as("problem kinds in components/examples (left) against the kinds the code answers on the public port")
                .containsExactlyInAnyOrderElementsOf(code.publicKinds().keySet());
        List<String> wrong = new ArrayList<>();
        code.publicKinds().forEach((kind, statuses) -> {
            Set<Integer> known = new TreeSet<>(statuses);
            known.remove(ANY_STATUS);
            Set<Integer> documented = catalogue.getOrDefault(kind, Set.of());
            boolean agrees = statuses.contains(ANY_STATUS) ? documented.containsAll(known) : documented.equals(known);
            if (!agrees) {
                wrong.add(kind + ": the code answers it with " + (statuses.contains(ANY_STATUS) ? "at least " : "") + known
                          + ", the document says " + documented);
            }
        });
        assertThat(wrong).as("kinds whose status differs").isEmpty();
        assertThat(code.adminOnly()).as("the admin port's own kinds were found (the scan reads them)").isNotEmpty();
        assertThat(catalogue.keySet()).as("the admin port's own kinds are not the public API's")
                .doesNotContainAnyElementsOf(code.adminOnly());
        Invariants.resourcesCameBack(app);
    }

    @Test
    void everyProblemAnOperationListsComesFromTheCatalogueUnderItsOwnStatus() {
        List<String> wrong = new ArrayList<>();
        Set<String> listed = new TreeSet<>();
        for (Operation op : operations()) {
            op.node().path("responses").properties().forEach(response -> {
                JsonNode content = resolve(response.getValue()).path("content");
                if (!content.has(PROBLEM_JSON)) {
                    return;
                }
                JsonNode examples = content.path(PROBLEM_JSON).path("examples");
                if (examples.isEmpty()) {
                    wrong.add(op + " " + response.getKey() + ": a problem response lists no kinds");
                }
                examples.properties().forEach(example -> {
                    String ref = example.getValue().path("$ref").asText();
                    if (!ref.startsWith(EXAMPLES)) {
                        wrong.add(op + " " + response.getKey() + " " + example.getKey() + " is not a $ref into " + EXAMPLES);
                        return;
                    }
                    JsonNode value = resolve(example.getValue()).path("value");
                    listed.add(kindOf(value));
                    if (!response.getKey().equals(value.path("status").asText())) {
                        wrong.add(op + " lists " + ref + " (status " + value.path("status") + ") under " + response.getKey());
                    }
                });
            });
        }
        assertThat(wrong).isEmpty();
        assertThat(catalogue().keySet()).as("every kind in the catalogue is listed by the operations that answer it")
                .allSatisfy(kind -> assertThat(listed.contains(kind) || ON_NO_ROUTE.contains(kind)).as(kind).isTrue());
        doc.at("/components/examples").properties().forEach(example -> {
            JsonNode value = example.getValue().path("value");
            assertThat(value.path("type").asText()).as(example.getKey()).startsWith(PROBLEM);
            assertThat(example.getKey()).as("an example is named by its kind").startsWith(kindOf(value));
            assertThat(value.path("status").isInt()).as(example.getKey() + " has a status").isTrue();
        });
        Invariants.resourcesCameBack(app);
    }

    // --- the document itself ---

    @Test
    void theDocumentIsOpenOnThePublicPortOnlyAndIsTheFileInTheSources() {
        Instance at = app.client().instance();

        Answer yaml = app.client().send("GET", at.api(), "/openapi", null, null, null);
        assertThat(yaml.status()).as(yaml.toString()).isEqualTo(200);
        assertThat(yaml.header("Content-Type")).startsWith("application/vnd.oai.openapi");
        assertThat(tree(new Yaml().load(yaml.body()))).as("the YAML and the JSON are one document").isEqualTo(doc);
        assertThat(tree(new Yaml().load(read(resources().resolve("META-INF/openapi.yaml")))))
                .as("what is served is src/main/resources/META-INF/openapi.yaml, not another file of that name")
                .isEqualTo(doc);
        assertThat(doc.path("openapi").asText()).startsWith("3.1.");

        Answer onAdmin = app.client().send("GET", at.admin(), "/openapi", at.operatorKey(), null, null);
        assertThat(onAdmin.status()).as("not served on the admin port: " + onAdmin).isEqualTo(404);

        List<String> dangling = new ArrayList<>();
        refs(doc).forEach(ref -> {
            if (!ref.startsWith("#/") || doc.at(ref.substring(1)).isMissingNode()) {
                dangling.add(ref);
            }
        });
        assertThat(dangling).as("$refs that lead nowhere").isEmpty();
        Invariants.resourcesCameBack(app);
    }

    @Test
    void theDocumentIsValidOpenApi() {
        Answer yaml = app.client().send("GET", app.client().instance().api(), "/openapi", null, null, null);
        ParseOptions options = new ParseOptions();
        options.setResolve(true);

        SwaggerParseResult parsed = new OpenAPIV3Parser().readContents(yaml.body(), null, options);

        assertThat(parsed.getMessages()).as("what an OpenAPI parser finds wrong with the document").isEmpty();
        assertThat(parsed.getOpenAPI().getPaths()).as("the parser read the paths").hasSize(doc.path("paths").size());
        Invariants.resourcesCameBack(app);
    }

    // --- reading the document ---

    record Route(String method, String path) {
        @Override
        public String toString() {
            return method + " " + path;
        }
    }

    record Operation(String method, String path, JsonNode node) {
        Route route() {
            return new Route(method, path);
        }

        @Override
        public String toString() {
            return method + " " + path;
        }
    }

    private static List<Operation> operations() {
        List<Operation> operations = new ArrayList<>();
        doc.path("paths").properties().forEach(path -> path.getValue().properties().forEach(method -> {
            if (HTTP_METHODS.contains(method.getKey())) {
                operations.add(new Operation(method.getKey().toUpperCase(), path.getKey(), method.getValue()));
            }
        }));
        return operations;
    }

    /** What an operation's security asks: none, a client's key, the operator's, or either. */
    private static AccessFilter.Need need(Operation op) {
        Set<String> roles = new TreeSet<>();
        for (JsonNode requirement : op.node().path("security")) {
            assertThat(requirement.fieldNames()).toIterable().as(op + " names only the bearer scheme").containsOnly("bearer");
            requirement.path("bearer").forEach(role -> roles.add(role.asText()));
            assertThat(requirement.path("bearer")).as(op + ": one role per requirement (several are alternatives)").hasSize(1);
        }
        if (roles.isEmpty()) {
            return AccessFilter.Need.ANYONE;
        }
        if (roles.equals(Set.of("client", "operator"))) {
            return AccessFilter.Need.CLIENT_OR_OPERATOR;
        }
        assertThat(roles).as(op + "'s roles").hasSize(1).isSubsetOf("client", "operator");
        return roles.contains("client") ? AccessFilter.Need.CLIENT : AccessFilter.Need.OPERATOR;
    }

    /** Why {@code answer} is not what the document lists for {@code op}; empty when it is. */
    private static Optional<String> undocumented(Operation op, Answer answer) {
        JsonNode response = op.node().path("responses").path(Integer.toString(answer.status()));
        if (response.isMissingNode()) {
            return Optional.of(op + " answered " + answer.status() + ", which the document does not list: " + answer);
        }
        if (!PROBLEM_JSON.equals(answer.header("Content-Type"))) {
            return Optional.empty();
        }
        Set<String> kinds = new TreeSet<>();
        resolve(response).at("/content/" + PROBLEM_JSON.replace("/", "~1") + "/examples")
                .forEach(example -> kinds.add(kindOf(resolve(example).path("value"))));
        return kinds.contains(answer.type()) ? Optional.empty()
                : Optional.of(op + " answered " + answer.status() + " " + answer.type() + ", the document lists " + kinds);
    }

    /** Every problem kind in components/examples, with the statuses its examples have. */
    private static Map<String, Set<Integer>> catalogue() {
        Map<String, Set<Integer>> kinds = new TreeMap<>();
        doc.at("/components/examples").forEach(example -> {
            JsonNode value = example.path("value");
            kinds.computeIfAbsent(kindOf(value), k -> new TreeSet<>()).add(value.path("status").asInt());
        });
        return kinds;
    }

    /** Helidon's constant for a method, as AccessFilter compares them. */
    private static Method method(String name) {
        return switch (name) {
            case "GET" -> Method.GET;
            case "POST" -> Method.POST;
            case "PUT" -> Method.PUT;
            case "DELETE" -> Method.DELETE;
            case "PATCH" -> Method.PATCH;
            case "HEAD" -> Method.HEAD;
            case "OPTIONS" -> Method.OPTIONS;
            default -> Method.create(name);
        };
    }

    private static String kindOf(JsonNode problem) {
        String type = problem.path("type").asText();
        assertThat(type).as("a problem's type").startsWith(PROBLEM);
        return type.substring(PROBLEM.length());
    }

    private static JsonNode resolve(JsonNode node) {
        JsonNode at = node;
        for (int hops = 0; at.has("$ref"); hops++) {
            assertThat(hops).as("a $ref chain ends").isLessThan(10);
            String ref = at.path("$ref").asText();
            assertThat(ref).as("a local $ref").startsWith("#/");
            at = doc.at(ref.substring(1));
            assertThat(at.isMissingNode()).as(ref + " resolves").isFalse();
        }
        return at;
    }

    private static Stream<String> refs(JsonNode node) {
        Stream<String> own = node.has("$ref") ? Stream.of(node.path("$ref").asText()) : Stream.empty();
        List<JsonNode> children = new ArrayList<>();
        node.elements().forEachRemaining(children::add);
        return Stream.concat(own, children.stream().flatMap(OpenApiTest::refs));
    }

    private static JsonNode tree(Object yaml) {
        return JSON.valueToTree(yaml);
    }

    // --- reading the routes ---

    record Recorded(Set<Route> routes, Set<Class<?>> services) {
    }

    /** The public port's routes as the code registers them: {@link Main#publicRoutes}, and the OpenAPI feature's GET. */
    private static Recorded recorded() {
        Recorded recorded = new Recorded(new LinkedHashSet<>(), new LinkedHashSet<>());
        Main.publicRoutes(recorder("", recorded), app.services());
        var openApi = Main.openApi().prototype();
        assertThat(openApi.sockets()).as("the document is served on the public socket only").containsExactly("@default");
        recorded.routes().add(new Route("GET", openApi.webContext()));
        return recorded;
    }

    /**
     * An {@link HttpRules} that records what is registered under {@code prefix}: services are walked with their
     * own prefix, routes with a method and a path are kept, and anything else fails (the recorder must be taught
     * it, or a route added that way would be missed).
     */
    private static HttpRules recorder(String prefix, Recorded recorded) {
        InvocationHandler handler = (proxy, method, args) -> {
            String name = method.getName();
            Class<?>[] types = method.getParameterTypes();
            if (method.getDeclaringClass() == Object.class) {
                return switch (name) {
                    case "toString" -> "recorder of " + prefix;
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> throw new AssertionError(name);
                };
            }
            if (name.equals("register") && types.length == 1 && types[0] == HttpService[].class) {
                walk(prefix, (HttpService[]) args[0], recorded);
                return proxy;
            }
            if (name.equals("register") && types.length == 2 && types[0] == String.class && types[1] == HttpService[].class) {
                walk(join(prefix, (String) args[0]), (HttpService[]) args[1], recorded);
                return proxy;
            }
            if (name.equals("register") && method.isDefault()) {
                // The Supplier and List forms: they end in register(HttpService...), which is recorded above.
                return InvocationHandler.invokeDefault(proxy, method, args);
            }
            if (HTTP_METHODS.contains(name) && types.length == 2 && types[0] == String.class && types[1] == Handler[].class) {
                recorded.routes().add(new Route(name.toUpperCase(), join(prefix, (String) args[0])));
                return proxy;
            }
            if (name.equals("route") && types.length == 3 && types[0] == Method.class && types[1] == String.class) {
                recorded.routes().add(new Route(((Method) args[0]).text(), join(prefix, (String) args[1])));
                return proxy;
            }
            throw new AssertionError("the route recorder does not know HttpRules." + name + List.of(types)
                                     + ": teach OpenApiTest.recorder, or the routes added that way go unchecked");
        };
        return (HttpRules) Proxy.newProxyInstance(OpenApiTest.class.getClassLoader(), new Class<?>[] {HttpRules.class}, handler);
    }

    private static void walk(String prefix, HttpService[] services, Recorded recorded) {
        for (HttpService service : services) {
            recorded.services().add(service.getClass());
            service.routing(recorder(prefix, recorded));
        }
    }

    private static String join(String prefix, String path) {
        String joined = path.equals("/") ? prefix : prefix + path;
        return joined.isEmpty() ? "/" : joined;
    }

    private static String sourceOf(Class<?> type) {
        Class<?> top = type;
        while (top.getEnclosingClass() != null) {
            top = top.getEnclosingClass();
        }
        return top.getName().replace('.', '/') + ".java";
    }

    // --- reading the problem kinds from the sources ---

    /** A status the scan cannot read (an expression): the document may give any. */
    private static final int ANY_STATUS = -1;

    private static final String LITERAL = "\"(?:[^\"\\\\]|\\\\.)*\"";
    /** {@code new Problem(status, kind, ...)}. */
    private static final Pattern NEW_PROBLEM = Pattern.compile("\\bnew\\s+Problem\\s*\\(\\s*([^,]*?)\\s*,\\s*(" + LITERAL + "|[^,)]*)");
    /** {@code Problem.badRequest(kind, ...)}, {@code Problem.notFound(kind, ...)}. */
    private static final Pattern FACTORY = Pattern.compile("\\bProblem\\s*\\.\\s*(badRequest|notFound)\\s*\\(\\s*(" + LITERAL + "|[^,)]*)");
    /**
     * The places that build a problem from a kind they are given rather than a literal, and how many such
     * {@code new Problem} each has: Problem's factories (their callers are read by {@link #FACTORY}), and the
     * edge's answer to Helidon's own {@code HttpException}s, whose kinds are in {@link #EDGE_HTTP_KINDS}.
     */
    private static final Map<String, Integer> FORWARDERS = Map.of("lastseat/web/Problem.java", 2,
                                                                 "lastseat/web/Edge.java", 1);

    /**
     * The edge answers an {@code HttpException} of Helidon's as {@code not-found} (404: no route) or
     * {@code http-<status>}; on the public port the one other that Helidon raises is the OpenAPI feature's 400 for
     * a {@code ?format=} it does not know.
     */
    private static final Map<String, Integer> EDGE_HTTP_KINDS = Map.of("not-found", 404, "http-400", 400);

    record Kinds(Map<String, Set<Integer>> publicKinds, Set<String> adminOnly) {
    }

    private static Kinds kindsInTheSources() {
        Path root = sources();
        Map<String, Set<Integer>> publicKinds = new TreeMap<>();
        Map<String, Set<Integer>> adminKinds = new TreeMap<>();
        List<String> unreadable = new ArrayList<>();
        Map<String, Integer> forwarded = new TreeMap<>();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(root)) {
            files = walk.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertThat(ADMIN_ONLY).as("the admin-only sources exist").allSatisfy(f -> assertThat(root.resolve(f)).exists());

        for (Path file : files) {
            String name = root.relativize(file).toString().replace('\\', '/');
            String code = withoutComments(read(file));
            Map<String, Set<Integer>> into = ADMIN_ONLY.contains(name) ? adminKinds : publicKinds;
            assertThat(code).as(name + ": a subclass of Problem would name its kind in super(...), which the scan does not read")
                    .doesNotContainPattern("extends\\s+Problem\\b");
            assertThat(code).as(name + ": a static import of Problem's factories would hide their calls from the scan")
                    .doesNotContainPattern("import\\s+static\\s+lastseat\\.web\\.Problem");

            Matcher m = NEW_PROBLEM.matcher(code);
            while (m.find()) {
                if (m.group(2).startsWith("\"")) {
                    add(into, unquote(m.group(2)), status(m.group(1)));
                } else {
                    forwarded.merge(name, 1, Integer::sum);
                    if (!FORWARDERS.containsKey(name)) {
                        unreadable.add(name + ":" + line(code, m.start()) + " new Problem(" + m.group(1) + ", " + m.group(2) + ", ...)");
                    }
                }
            }
            m = FACTORY.matcher(code);
            while (m.find()) {
                if (m.group(2).startsWith("\"")) {
                    add(into, unquote(m.group(2)), m.group(1).equals("badRequest") ? 400 : 404);
                } else {
                    unreadable.add(name + ":" + line(code, m.start()) + " Problem." + m.group(1) + "(" + m.group(2) + ", ...)");
                }
            }
            if (name.equals("lastseat/web/Edge.java")) {
                assertThat(code).as("Edge still names HttpException kinds not-found and http-<status>")
                        .contains("\"not-found\"").contains("\"http-\"");
                EDGE_HTTP_KINDS.forEach((kind, status) -> add(into, kind, status));
            }
        }

        assertThat(unreadable).as("problem kinds the scan cannot read: use a literal kind, or teach OpenApiTest "
                                  + "(FORWARDERS) how to find the kinds of a new forwarder").isEmpty();
        assertThat(forwarded).as("the places that build a problem from a kind they are given").isEqualTo(new TreeMap<>(FORWARDERS));
        assertThat(publicKinds).as("the scan found the kinds it must (it reads the code)")
                .containsKeys("seats-taken", "unauthorized", "malformed-json", "unknown-event", "database-busy");

        Set<String> adminOnly = new TreeSet<>(adminKinds.keySet());
        adminOnly.removeAll(publicKinds.keySet());
        return new Kinds(publicKinds, adminOnly);
    }

    private static void add(Map<String, Set<Integer>> kinds, String kind, int status) {
        kinds.computeIfAbsent(kind, k -> new TreeSet<>()).add(status);
    }

    private static int status(String expression) {
        return expression.matches("[1-5]\\d\\d") ? Integer.parseInt(expression) : ANY_STATUS;
    }

    private static String unquote(String literal) {
        return literal.substring(1, literal.length() - 1);
    }

    private static int line(String code, int offset) {
        return (int) code.substring(0, offset).chars().filter(c -> c == '\n').count() + 1;
    }

    /** The code with its comments blanked (lines kept), so that a Javadoc's example is not read as code. */
    static String withoutComments(String code) {
        StringBuilder out = new StringBuilder(code.length());
        int i = 0;
        while (i < code.length()) {
            char c = code.charAt(i);
            if (code.startsWith("\"\"\"", i)) {
                int end = code.indexOf("\"\"\"", i + 3);
                end = end < 0 ? code.length() : end + 3;
                out.append(code, i, end);
                i = end;
            } else if (c == '"' || c == '\'') {
                int j = i + 1;
                while (j < code.length() && code.charAt(j) != c) {
                    j += code.charAt(j) == '\\' ? 2 : 1;
                }
                j = Math.min(j + 1, code.length());
                out.append(code, i, j);
                i = j;
            } else if (code.startsWith("//", i)) {
                int end = code.indexOf('\n', i);
                end = end < 0 ? code.length() : end;
                out.append(" ".repeat(end - i));
                i = end;
            } else if (code.startsWith("/*", i)) {
                int end = code.indexOf("*/", i + 2);
                end = end < 0 ? code.length() : end + 2;
                code.substring(i, end).chars().forEach(ch -> out.append(ch == '\n' ? '\n' : ' '));
                i = end;
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    /** The service's sources: tests run from the project's top directory. */
    private static Path sources() {
        Path root = Path.of("src/main/java");
        assertThat(root.resolve("lastseat/Main.java")).as("the service's sources, from " + Path.of("").toAbsolutePath()).exists();
        return root;
    }

    private static Path resources() {
        return Path.of("src/main/resources");
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

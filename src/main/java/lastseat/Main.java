package lastseat;

import io.helidon.config.Config;
import io.helidon.health.HealthCheck;
import io.helidon.http.DirectHandler;
import io.helidon.health.HealthCheckResponse;
import io.helidon.health.HealthCheckType;
import io.helidon.logging.common.LogConfig;
import io.helidon.metrics.api.Gauge;
import io.helidon.metrics.api.Meter;
import io.helidon.metrics.api.Metrics;
import io.helidon.openapi.OpenApiFeature;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.observe.ObserveFeature;
import io.helidon.webserver.observe.health.HealthObserver;
import io.helidon.webserver.observe.metrics.MetricsObserver;
import io.helidon.webserver.staticcontent.StaticContentService;
import lastseat.access.AccessFilter;
import lastseat.config.LastseatConfig;
import lastseat.db.DatabaseBusy;
import lastseat.inventory.NewEvent;
import lastseat.outbox.OutboxQuery;
import lastseat.web.Edge;

import java.math.BigDecimal;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/** Starts lastseat: configuration, database, routes, observe endpoints. */
public final class Main {
    private static final Logger LOG = Logger.getLogger(Main.class.getName());

    private Main() {
    }

    public static void main(String[] args) {
        LogConfig.configureRuntime();
        List<JvmOptions.Option> wanted = JvmOptions.wanted();
        List<String> lacking = JvmOptions.lacking(wanted, JvmOptions::ofThisJvm);
        if (lacking.isEmpty()) {
            LOG.info("JVM options as measured: " + String.join(" ", wanted.stream().map(JvmOptions.Option::written).toList()));
        } else {
            LOG.warning("lastseat started without the JVM options it is measured with: " + String.join(", ", lacking)
                        + "; start it as java --enable-preview @src/main/resources/jvm.options -jar target/lastseat.jar"
                        + " (docs/CONFIGURATION.md, JVM options)");
        }
        Running running = start(Config.create());
        // The one shutdown path (server.shutdown-hook is off, and H2's own hook is off in its URL): SIGTERM drains.
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("lastseat-shutdown").unstarted(running::close));
        LOG.info("lastseat listening on http://localhost:" + running.server().port() + ", admin on http://"
                 + running.services().config().access().adminHost() + ":" + running.adminPort());
    }

    /**
     * A started server and what it serves. Closing drains: the server stops accepting and waits up
     * to {@code server.shutdown-grace-period} for the requests in flight, every purchase still
     * running is waited for (it ends within its deadline and slack), and only then do the background
     * jobs stop and the pool close — a purchase never finds the database gone under it.
     */
    public record Running(WebServer server, Services services, List<Meter> gauges) implements AutoCloseable {
        public int port() {
            return server.port();
        }

        /** The admin socket's port: the operator's routes and /observe. */
        public int adminPort() {
            return server.port(ADMIN);
        }

        @Override
        public void close() {
            int running = services.purchaseRoutes().inFlight();
            if (running > 0) {
                LOG.info("lastseat stopping: draining " + running + " purchases in flight");
            }
            // The seat-map streams would hold the stop for its whole grace period: end them first.
            services.opsRoutes().close();
            server.stop();
            if (!services.purchaseRoutes().drain(Services.DRAIN_WAIT)) {
                LOG.warning("lastseat stopping with " + services.purchaseRoutes().inFlight() + " purchases still running after "
                            + Services.DRAIN_WAIT.toMillis() + " ms; recovery finishes them at the next start");
            }
            gauges.forEach(Metrics.globalRegistry()::remove);
            services.close();
        }
    }

    public static Running start(Config config) {
        LastseatConfig checked = LastseatConfig.from(config);
        if (checked.warmUp().enabled()) {
            Warmup.run(config, checked);
        }
        Services services = Services.create(config);
        List<Meter> gauges = List.of();
        WebServer server = null;
        try {
            services.installKeys();
            if (services.config().demo().createEvent()) {
                createDemoEvent(services);
            }
            gauges = registerGauges(services);
            server = WebServer.builder()
                    .config(config.get("server"))
                    .shutdownGracePeriod(services.config().drainPeriod())
                    // lastseat's own hook drains, then closes the pool; Helidon's would stop the server alongside it.
                    .shutdownHook(false)
                    .directHandlers(handlers -> handlers.addHandler(DirectHandler.EventType.BAD_REQUEST, edge(services)::transport))
                    .putSocket(ADMIN, socket -> socket.port(services.config().access().adminPort())
                            .host(services.config().access().adminHost()))
                    .addFeature(ObserveFeature.builder()
                                        .sockets(List.of(ADMIN))
                                        .addObserver(HealthObserver.builder().details(true).addCheck(database(services)).build())
                                        .addObserver(MetricsObserver.create())
                                        .build())
                    .addFeature(openApi())
                    .routing(routing -> routing(routing, services))
                    .routing(ADMIN, routing -> adminRouting(routing, services))
                    .build()
                    .start();
            services.startWorkers();
            return new Running(server, services, gauges);
        } catch (RuntimeException e) {
            // A server already listening would answer with closed services for the life of the process.
            if (server != null) {
                server.stop();
            }
            gauges.forEach(Metrics.globalRegistry()::remove);
            services.close();
            throw e;
        }
    }

    /** The name of the admin socket (access.admin-port). */
    public static final String ADMIN = "admin";

    /**
     * The public port's routing: {@link AccessFilter}'s table, the {@link #publicRoutes}, and the one
     * error mapping ({@link Edge}: every error leaves as problem+json). {@code GET /openapi} is added beside
     * them by the OpenAPI feature.
     */
    public static void routing(HttpRouting.Builder routing, Services services) {
        Edge edge = edge(services);
        routing.addFilter(new AccessFilter(services.apiKeys(), AccessFilter.Socket.PUBLIC, edge, services.config().purchase().workTime()));
        publicRoutes(routing, services);
        edge.errors(routing);
    }

    /** The web edge's one mapper, with the Retry-After of every 503 and 429 ({@code purchase.retry-after}). */
    private static Edge edge(Services services) {
        return new Edge(services.config().purchase().retryAfter());
    }

    /**
     * Every route of the public API: events and purchases. A public route is added here and nowhere else,
     * for this is what OpenApiTest reads to hold {@code META-INF/openapi.yaml} to the routes served: a route
     * added here and not described there (or described and not served) fails the build.
     */
    public static void publicRoutes(HttpRules rules, Services services) {
        rules.register("/events", services.eventRoutes())
             .register("/purchases", services.purchaseRoutes());
    }

    /**
     * {@code GET /openapi}: the public API's document, {@code META-INF/openapi.yaml}, as YAML or JSON, on the
     * public socket only (the admin routes are the operator's, and are not in it); {@link AccessFilter}'s
     * table lets anyone read it.
     */
    public static OpenApiFeature openApi() {
        return OpenApiFeature.builder().addSocket(WebServer.DEFAULT_SOCKET_NAME).build();
    }

    /** The admin port's routes, the operator's only (and /observe/health and the /ops/ page's files, which need no key). */
    public static void adminRouting(HttpRouting.Builder routing, Services services) {
        Edge edge = edge(services);
        routing.addFilter(new AccessFilter(services.apiKeys(), AccessFilter.Socket.ADMIN, edge, services.config().db().connectionTimeout()))
               .register("/drills", services.drillRoutes())
               .register("/outbox", services.outboxRoutes())
               .register("/admin", services.adminRoutes())
               .register("/ops/api", services.opsRoutes())
               // The page itself holds no data: it is served to anyone; what it reads needs the operator's key.
               .register("/ops", StaticContentService.builder("ops").welcomeFileName("index.html").build());
        edge.errors(routing);
    }

    private static HealthCheck database(Services services) {
        return new HealthCheck() {
            @Override
            public HealthCheckType type() {
                return HealthCheckType.READINESS;
            }

            @Override
            public String name() {
                return "database";
            }

            @Override
            public HealthCheckResponse call() {
                try {
                    boolean valid = services.db().read(c -> c.isValid(1));
                    return HealthCheckResponse.builder().status(valid)
                            .detail("activeConnections", services.db().activeConnections())
                            .detail("poolSize", services.db().poolSize())
                            .build();
                } catch (DatabaseBusy e) {
                    LOG.log(Level.WARNING, "health: the database is busy", e);
                    return down("the database is busy: no connection came free within db.connection-timeout");
                } catch (RuntimeException e) {
                    // The driver's and the pool's words name hosts, classes and SQL: the log has them, the answer does not.
                    LOG.log(Level.WARNING, "health: the database check failed", e);
                    return down("the database could not be used; the server log says why");
                }
            }

            private HealthCheckResponse down(String why) {
                return HealthCheckResponse.builder().status(false).detail("error", why).build();
            }
        };
    }

    /** Gauges that read this process's bulkhead and pool; removed again when the server stops. */
    private static List<Meter> registerGauges(Services services) {
        var registry = Metrics.globalRegistry();
        return List.of(
                registry.getOrCreate(Gauge.builder("lastseat.payment.bulkhead.available", services.payments(),
                                                   p -> p.availablePermits())
                                             .description("Free payment bulkhead permits")),
                registry.getOrCreate(Gauge.builder("lastseat.db.pool.active", services.db(), db -> db.activeConnections())
                                             .description("Database connections in use")),
                registry.getOrCreate(Gauge.builder("lastseat.purchases.admission.available", services.purchaseRoutes(),
                                                   r -> r.admissionAvailable())
                                             .description("Free purchase places of this process (purchase.max-in-flight)")),
                registry.getOrCreate(Gauge.builder("lastseat.payments.unknown", services.purchaseWorkers(),
                                                   w -> w.unknownPayments())
                                             .description("Purchases whose payment outcome is not known yet")),
                registry.getOrCreate(Gauge.builder("lastseat.payments.unknown.oldest.seconds", services.purchaseWorkers(),
                                                   w -> w.oldestUnknownSeconds())
                                             .description("How long the oldest PAYMENT_UNKNOWN purchase has waited")),
                registry.getOrCreate(Gauge.builder("lastseat.payments.unresolved", services.purchaseWorkers(),
                                                   w -> w.unresolvedPayments())
                                             .description("Purchases whose payment stayed unknown past reconcile.give-up-after: "
                                                          + "an operator must look (GET /purchases?state=PAYMENT_UNRESOLVED)")),
                registry.getOrCreate(Gauge.builder("lastseat.refunds.dead", services.db(), OutboxQuery::deadRefunds)
                                             .description("Refunds given up on: money owed to buyers (POST /outbox/{id}/retry)")),
                registry.getOrCreate(Gauge.builder("lastseat.outbox.dead", services.db(), db -> OutboxQuery.gauge(db, "DEAD"))
                                             .description("Outbox rows given up on (GET /outbox?state=dead)")),
                registry.getOrCreate(Gauge.builder("lastseat.outbox.pending", services.db(), db -> OutboxQuery.gauge(db, "PENDING"))
                                             .description("Outbox rows waiting to be delivered")));
    }

    private static void createDemoEvent(Services services) {
        if (services.inventory().find("demo", false).isEmpty()) {
            // Two instances starting together may both create it: the second is told it exists, which is fine.
            services.inventory().create(new NewEvent("demo", "Demo concert",
                    List.of("A1", "A2", "A3", "A4", "A5", "B1", "B2", "B3", "B4", "B5"), null, new BigDecimal("40.00"), "EUR").valid(10));
        }
    }
}

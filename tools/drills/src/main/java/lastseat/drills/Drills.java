package lastseat.drills;

import java.io.PrintStream;
import java.net.URI;
import lastseat.testkit.Instance;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * {@code bin/drill <name>|all}: runs drills against a running lastseat and its stubs, prints each
 * drill's checks and, last, one JSON line; exits 1 when a check failed, 2 on bad arguments.
 *
 * <p>Every drill starts and ends with the stubs reset to their files (and an empty journal and
 * ledger), and works on an event of its own, so drills do not disturb each other; they do inject
 * faults into the stubs they are given, so point them at a test setup, never at real providers.
 */
public final class Drills {
    private Drills() {
    }

    static List<Drill> catalogue() {
        return Stream.of(CheckDrills.all().stream(), PaymentDrills.all().stream(), Stream.of(StampedeDrill.drill()),
                         LifecycleDrills.all().stream(), Stream.of(MoneyAudit.drill(), KillCommits.drill()))
                .flatMap(s -> s).toList();
    }

    /** Runs one drill; a drill that cannot run (a refused stub, a dead server) is a failed drill, not a crash. */
    static Findings.Report run(Drill drill, Target target, Settings settings) {
        Findings findings = new Findings();
        try {
            target.resetStubs();
            if (!drill.ownServer()) {
                target.warmUp();
                target.resetStubs();
            }
            drill.body().run(target, settings, findings);
        } catch (RuntimeException e) {
            findings.check(false, "the drill could not finish: " + e.getMessage());
        } finally {
            try {
                target.resetStubs();
            } catch (RuntimeException e) {
                findings.check(false, "the stubs could not be reset: " + e.getMessage());
            }
        }
        return findings.report(drill.name());
    }

    public static void main(String[] args) {
        PrintStream out = System.out;
        Map<String, String> options;
        Settings settings;
        List<String> names = new ArrayList<>();
        try {
            options = parse(args, names);
            settings = settings(options);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.err.println(usage());
            System.exit(2);
            return;
        }
        if (options.containsKey("check-arguments")) {
            return;
        }
        Target target = new Target(new Instance(URI.create(options.getOrDefault("url", "http://127.0.0.1:8080")),
                                                URI.create(options.getOrDefault("admin-url", "http://127.0.0.1:8081")),
                                                options.getOrDefault("operator-key", Instance.DEMO_OPERATOR_KEY),
                                                options.getOrDefault("client-key", Instance.DEMO_CLIENT_KEY)),
                                   URI.create(options.getOrDefault("stubs", "http://127.0.0.1:8089")));
        List<Drill> chosen = names.contains("all") ? catalogue()
                : names.stream().map(n -> catalogue().stream().filter(d -> d.name().equals(n)).findFirst().orElseThrow()).toList();
        List<Findings.Report> reports = new ArrayList<>();
        for (Drill drill : chosen) {
            // A blank line between drills, none after the last: a JSON line is the last line of the output.
            if (!reports.isEmpty()) {
                out.println();
            }
            out.println("== " + drill.name() + ": " + drill.fault());
            out.println("   must show: " + drill.mustShow());
            Findings.Report report = run(drill, target, settings);
            report.lines().forEach(out::println);
            out.println("   " + (report.ok() ? "OK" : "FAILED"));
            out.println(report.json());
            reports.add(report);
        }
        if (chosen.size() > 1) {
            out.println();
            out.println(table(chosen, reports));
            out.println(summary(reports));
        }
        System.exit(reports.stream().allMatch(Findings.Report::ok) ? 0 : 1);
    }

    static String table(List<Drill> drills, List<Findings.Report> reports) {
        StringBuilder table = new StringBuilder("| drill | fault | ok | figures |\n| --- | --- | --- | --- |\n");
        for (int i = 0; i < drills.size(); i++) {
            Findings.Report report = reports.get(i);
            String figures = report.figures().entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                    .reduce((a, b) -> a + " " + b).orElse("");
            table.append("| ").append(drills.get(i).name()).append(" | ").append(drills.get(i).fault()).append(" | ")
                 .append(report.ok() ? "ok" : "FAILED").append(" | ").append(figures).append(" |\n");
        }
        return table.toString();
    }

    static String summary(List<Findings.Report> reports) {
        var line = Target.object();
        line.put("drill", "all");
        line.put("ok", reports.stream().allMatch(Findings.Report::ok));
        var each = line.putObject("drills");
        reports.forEach(r -> each.put(r.drill(), r.ok()));
        return line.toString();
    }

    /** The settings the options ask for, over {@link Settings#defaults()}; a reserve longer than half the deadline is refused, as the service refuses it. */
    static Settings settings(Map<String, String> options) {
        Settings settings = Settings.defaults();
        if (options.containsKey("deadline")) {
            settings = settings.withDeadline(Duration.ofMillis(Long.parseLong(options.get("deadline"))));
        }
        if (options.containsKey("answer-reserve")) {
            settings = settings.withAnswerReserve(Duration.ofMillis(Long.parseLong(options.get("answer-reserve"))));
        }
        if (settings.answerReserve().multipliedBy(2).compareTo(settings.deadline()) > 0) {
            throw new IllegalArgumentException("--answer-reserve is at most half of --deadline, as purchase.answer-reserve is (here "
                                               + settings.answerReserve().toMillis() + " of " + settings.deadline().toMillis() + " ms)");
        }
        if (options.containsKey("mode") || options.containsKey("buyers")) {
            settings = settings.withStampede(options.get("mode"), Integer.parseInt(options.getOrDefault("buyers", "200")));
        }
        if (options.containsKey("seed") || options.containsKey("purchases")) {
            settings = settings.withMoneyAudit(options.containsKey("seed") ? Long.valueOf(options.get("seed")) : null,
                                               Integer.parseInt(options.getOrDefault("purchases", String.valueOf(settings.auditPurchases()))));
        }
        return settings;
    }

    /** The options by name, the drills' names added to {@code names}; {@link IllegalArgumentException} names what is wrong. */
    static Map<String, String> parse(String[] args, List<String> names) {
        Map<String, String> options = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("--check-arguments")) {
                options.put("check-arguments", "true");
            } else if (arg.startsWith("--")) {
                String key = arg.substring(2);
                if (!List.of("url", "admin-url", "operator-key", "client-key", "stubs", "mode", "buyers", "deadline", "answer-reserve", "seed",
                             "purchases")
                        .contains(key) || i + 1 >= args.length) {
                    throw new IllegalArgumentException("Unknown option or missing value: " + arg);
                }
                options.put(key, args[++i]);
            } else {
                names.add(arg);
            }
        }
        List<String> known = new ArrayList<>(catalogue().stream().map(Drill::name).toList());
        known.add("all");
        if (names.isEmpty()) {
            throw new IllegalArgumentException("Name a drill, or all.");
        }
        for (String name : names) {
            if (!known.contains(name)) {
                throw new IllegalArgumentException("There is no drill " + name + "; the drills are " + String.join(", ", known));
            }
        }
        if (options.containsKey("mode") && !List.of("unsafe", "safe").contains(options.get("mode"))) {
            throw new IllegalArgumentException("--mode is unsafe or safe");
        }
        if (options.containsKey("buyers") && !options.get("buyers").matches("[0-9]{1,5}")) {
            throw new IllegalArgumentException("--buyers is a whole number");
        }
        if (options.containsKey("deadline") && !options.get("deadline").matches("[0-9]{1,6}")) {
            throw new IllegalArgumentException("--deadline is the target's purchase.deadline in milliseconds");
        }
        if (options.containsKey("answer-reserve") && !options.get("answer-reserve").matches("[0-9]{1,6}")) {
            throw new IllegalArgumentException("--answer-reserve is the target's purchase.answer-reserve in milliseconds");
        }
        if (options.containsKey("seed") && !options.get("seed").matches("-?[0-9]{1,18}")) {
            throw new IllegalArgumentException("--seed is a whole number (the money audit's seed; the last run printed its own)");
        }
        if (options.containsKey("purchases") && !options.get("purchases").matches("0*[1-9][0-9]{0,3}")) {
            throw new IllegalArgumentException("--purchases is the money audit's number of buyers, 1 to 9999");
        }
        return options;
    }

    private static String usage() {
        return "usage: bin/drill <drill>... | all [--url http://host:port] [--admin-url http://host:port] "
               + "[--operator-key KEY] [--client-key KEY] [--stubs http://host:port] "
               + "[--mode unsafe|safe] [--buyers N] [--deadline ms] [--answer-reserve ms] [--seed N] [--purchases N]";
    }
}

package lastseat.drills;

/**
 * One fault injected into a running lastseat ({@code fault}), and what must hold under it
 * ({@code mustShow}). A drill with {@code ownServer} starts the lastseat it drills itself and uses
 * only the target's stubs.
 */
record Drill(String name, String fault, String mustShow, Body body, boolean ownServer) {

    Drill(String name, String fault, String mustShow, Body body) {
        this(name, fault, mustShow, body, false);
    }

    /** The same drill, run against a lastseat it starts itself. */
    Drill onItsOwnServer() {
        return new Drill(name, fault, mustShow, body, true);
    }

    interface Body {
        void run(Target target, Settings settings, Findings findings);
    }
}

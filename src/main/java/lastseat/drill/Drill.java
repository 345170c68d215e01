package lastseat.drill;

/** One fault injected into a running lastseat ({@code fault}), and what must hold under it ({@code mustShow}). */
record Drill(String name, String fault, String mustShow, Body body) {

    interface Body {
        void run(Target target, Settings settings, Findings findings);
    }
}

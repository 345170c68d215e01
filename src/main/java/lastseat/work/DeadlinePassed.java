package lastseat.work;

/** The deadline passed before the work finished; its subtasks were interrupted and awaited. */
public final class DeadlinePassed extends Exception {
    public DeadlinePassed(String what) {
        super(what + ": deadline passed", null, false, false);
    }
}

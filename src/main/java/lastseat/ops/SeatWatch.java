package lastseat.ops;

import lastseat.config.OpsConfig;
import lastseat.inventory.EventView;
import lastseat.inventory.Inventory;
import lastseat.web.Json;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Live seat maps for the operator's page: one reader per watched event, whatever the number of its
 * viewers, reads the event's seats from the database every {@code ops.poll-interval} and hands each
 * viewer what changed. The database is the truth, so viewers of several instances see the same map.
 *
 * <p>Contract: a viewer's first message is a {@code snapshot} of every seat; after it, {@code change}
 * messages carry the seats whose state changed, in the order the reader saw them, so applying them to
 * the snapshot gives the map as the reader last read it. At most {@code ops.max-streams} viewers at once;
 * the reader of an event stops when its last viewer leaves.
 *
 * <p>Hazard: one structure, {@link Watched}, guarded by its own monitor: the reader's diff and broadcast
 * and a viewer's subscription (its snapshot is the reader's last read) happen under it, so no change is
 * lost or applied before the snapshot it follows. A viewer that does not keep up (its queue full) is
 * ended, and its page reconnects for a new snapshot: a slow viewer never holds the reader.
 */
public final class SeatWatch implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(SeatWatch.class.getName());
    /** Messages one viewer may have waiting; past it the viewer is ended. */
    private static final int QUEUE = 256;
    /** Ends a viewer's stream. */
    static final Message END = new Message("end", "");

    private final Inventory inventory;
    private final OpsConfig config;
    private final Semaphore streams;
    private final Map<String, Watched> watched = new ConcurrentHashMap<>();
    private volatile boolean closed;

    public SeatWatch(Inventory inventory, OpsConfig config) {
        this.inventory = inventory;
        this.config = config;
        this.streams = new Semaphore(config.maxStreams());
    }

    /** One server-sent event: its name and its JSON. */
    record Message(String name, String data) {
    }

    /** A viewer of one event: take its messages until {@link #END}, then close it. */
    final class Viewer implements AutoCloseable {
        private final BlockingQueue<Message> queue = new ArrayBlockingQueue<>(QUEUE);
        private final Watched of;
        private boolean left;

        private Viewer(Watched of) {
            this.of = of;
        }

        /** The next message, waiting at most {@code wait}; empty when none came. */
        Optional<Message> next(Duration wait) throws InterruptedException {
            return Optional.ofNullable(queue.poll(wait.toNanos(), TimeUnit.NANOSECONDS));
        }

        /** Hands a message over; false when the viewer is too far behind (it is then ended). */
        private boolean offer(Message message) {
            if (queue.offer(message)) {
                return true;
            }
            queue.clear();
            queue.offer(END);
            return false;
        }

        @Override
        public void close() {
            synchronized (of) {
                if (left) {
                    return;
                }
                left = true;
                of.viewers.remove(this);
            }
            streams.release();
        }
    }

    /** Seat-map streams open now. */
    int open() {
        return config.maxStreams() - streams.availablePermits();
    }

    /** Events whose seats are being read now. */
    int readers() {
        return watched.size();
    }

    /**
     * A viewer of {@code eventId}, its snapshot already waiting; empty when {@code ops.max-streams}
     * viewers are open (or the watch is closed). The event must exist.
     */
    Optional<Viewer> watch(String eventId) {
        if (closed || !streams.tryAcquire()) {
            return Optional.empty();
        }
        try {
            while (true) {
                Watched event = watched.computeIfAbsent(eventId, Watched::new);
                synchronized (event) {
                    if (event.stopped) {
                        // Its reader stopped as its last viewer left: start another.
                        watched.remove(eventId, event);
                        continue;
                    }
                    if (event.last == null) {
                        event.last = read(eventId);
                        event.start();
                    }
                    Viewer viewer = new Viewer(event);
                    viewer.offer(new Message("snapshot", snapshot(eventId, event.last)));
                    event.viewers.add(viewer);
                    return Optional.of(viewer);
                }
            }
        } catch (RuntimeException e) {
            streams.release();
            throw e;
        }
    }

    /** Ends every stream and stops every reader; for the server's stop. */
    @Override
    public void close() {
        closed = true;
        for (Watched event : watched.values()) {
            synchronized (event) {
                event.stopped = true;
                event.viewers.forEach(v -> v.offer(END));
                if (event.reader != null) {
                    event.reader.interrupt();
                }
            }
        }
    }

    /** One watched event: its viewers, the seats as last read, and the reader. */
    private final class Watched {
        private final String eventId;
        private final List<Viewer> viewers = new ArrayList<>();
        private Map<String, String> last;
        private boolean stopped;
        private Thread reader;

        Watched(String eventId) {
            this.eventId = eventId;
        }

        void start() {
            reader = Thread.ofVirtual().name("seat-watch-" + eventId).start(this::readUntilUnwatched);
        }

        private void readUntilUnwatched() {
            try {
                while (true) {
                    Thread.sleep(config.pollInterval());
                    synchronized (this) {
                        if (stopped || viewers.isEmpty()) {
                            stopped = true;
                            watched.remove(eventId, this);
                            return;
                        }
                    }
                    Map<String, String> now;
                    try {
                        now = read(eventId);
                    } catch (RuntimeException e) {
                        // A busy database: the map stays as it was and the next read catches up.
                        LOG.log(Level.FINE, "could not read the seats of " + eventId, e);
                        continue;
                    }
                    synchronized (this) {
                        Map<String, String> changed = new LinkedHashMap<>();
                        now.forEach((seat, state) -> {
                            if (!state.equals(last.get(seat))) {
                                changed.put(seat, state);
                            }
                        });
                        last = now;
                        if (!changed.isEmpty()) {
                            Message change = new Message("change", seats(changed));
                            viewers.removeIf(viewer -> !viewer.offer(change));
                        }
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private Map<String, String> read(String eventId) {
        EventView event = inventory.find(eventId, true).orElseThrow(() -> new IllegalStateException("no event " + eventId));
        Map<String, String> seats = new LinkedHashMap<>();
        event.seats().forEach(seat -> seats.put(seat.seat(), seat.state()));
        return seats;
    }

    private static String snapshot(String eventId, Map<String, String> seats) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("event", eventId);
        body.put("seats", list(seats));
        return Json.text(body);
    }

    private static String seats(Map<String, String> seats) {
        return Json.text(Map.of("seats", list(seats)));
    }

    private static List<EventView.SeatView> list(Map<String, String> seats) {
        return seats.entrySet().stream().map(e -> new EventView.SeatView(e.getKey(), e.getValue())).toList();
    }
}

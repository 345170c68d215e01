package lastseat.drills;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * A TCP proxy between a lastseat and its outside services (the WireMock stubs) that can make all of
 * them unreachable at once. {@link #down} resets every connection it carries (SO_LINGER 0) and shuts
 * the door one of two ways ({@link Door}): the listening socket closed, so a new connection is
 * refused at once; or a listening socket that never accepts, its accept queue kept full, so a new
 * connection is neither refused nor completed and the caller's connect times out. {@link #up()}
 * listens again on the same port. Otherwise bytes pass through unchanged, so WireMock's own faults,
 * delays and ledger work as they do without the proxy, and a reset from WireMock reaches lastseat as
 * a reset.
 *
 * <p>Contract: at most {@code maxConnections} connections at once (one more is reset as soon as it
 * is accepted, counted in {@link #overflows()}); each connection costs two virtual threads; every
 * unreachable window is recorded with its start and end ({@link #windows()}); {@link #close()} stops
 * listening, resets what is open and waits a bounded time for its threads.
 *
 * <p>Hazard: a window that starts while a request is half-forwarded cuts it where it is, so WireMock
 * may or may not have seen it. That is the ambiguity a payment client must survive, and the reason
 * this proxy belongs to drills only: never put it in front of a real provider. A timed-out door
 * relies on Linux dropping a SYN when a listener's accept queue is full; a connection that arrives
 * in the instant before the queue is filled completes, its request goes nowhere, and it is reset
 * when the window ends — a reset after sending, which lastseat rightly treats as "may have arrived".
 */
final class FaultProxy implements AutoCloseable {
    /** How a new connection fails while the proxy is down. */
    enum Door {
        /** Nothing listens: the kernel answers the SYN with a RST, and connect fails at once. */
        REFUSED("connections refused"),
        /**
         * A listener that never accepts, its accept queue full: Linux drops the SYN, and connect waits
         * until the caller gives up (the JDK client's HttpConnectTimeoutException). Nothing was sent.
         */
        TIMED_OUT("connections time out");

        final String label;

        Door(String label) {
            this.label = label;
        }
    }

    /** One stretch of time in which nothing behind the proxy could be reached; epoch millis. */
    record Window(long startedAt, long endedAt, String why, Door door) {
        String describe() {
            return why + "; " + door.label;
        }
    }

    /** A window to open at once (0 ms: none), and its door. */
    record Outage(long millis, Door door) {
        static final Outage NONE = new Outage(0, Door.REFUSED);
    }

    private static final Duration REBIND_WAIT = Duration.ofSeconds(5);
    /** A loopback connect that has not completed in this long will not: the SYN was dropped. */
    private static final int FILLER_CONNECT_MILLIS = 100;
    private static final int MOST_FILLERS = 16;
    private static final Pattern REQUEST_LINE = Pattern.compile("[A-Z]{3,7} /\\S* HTTP/1\\.[01]");
    private final InetSocketAddress upstream;
    private final Semaphore slots;
    private final Set<Pipe> open = ConcurrentHashMap.newKeySet();
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final List<Window> windows = new ArrayList<>();
    private final AtomicLong overflows = new AtomicLong();
    private final AtomicLong upstreamResets = new AtomicLong();
    private final int port;
    private ServerSocket listener;
    /** The accept loop of the current listener. */
    private java.util.concurrent.Future<?> accepting;
    private boolean closed;
    private long downSince = -1;
    private String downWhy;
    private Door downDoor;
    /** While a timed-out door is shut: the listener that never accepts, and the connections that fill its queue. */
    private ServerSocket blackHole;
    private final List<Socket> fillers = new ArrayList<>();
    private volatile Function<String, Outage> afterUpstreamReset = request -> Outage.NONE;

    private FaultProxy(InetSocketAddress upstream, int maxConnections) throws IOException {
        this.upstream = upstream;
        this.slots = new Semaphore(maxConnections);
        this.listener = bind(0, 200);
        this.port = listener.getLocalPort();
        listen(listener);
    }

    /** A proxy on a free loopback port in front of {@code upstream} (http://host:port). */
    static FaultProxy start(URI upstream, int maxConnections) {
        try {
            return new FaultProxy(new InetSocketAddress(upstream.getHost(), upstream.getPort()), maxConnections);
        } catch (IOException e) {
            throw new IllegalStateException("the fault proxy could not listen: " + e.getMessage(), e);
        }
    }

    /** Where lastseat reaches its outside services through this proxy. */
    URI url() {
        return URI.create("http://127.0.0.1:" + port);
    }

    /**
     * Asked each time WireMock resets a connection (its {@code CONNECTION_RESET_BY_PEER} fault), with
     * the request line that was cut ("POST /payments HTTP/1.1"): a window to open at once, before
     * lastseat sees the reset, or {@link Outage#NONE}. This is how a reset followed by a refused or
     * timed-out reconnect — the compound fault a single fault per call never makes — becomes likely
     * instead of luck.
     */
    void afterUpstreamReset(Function<String, Outage> outage) {
        this.afterUpstreamReset = outage;
    }

    /** {@link #down(String, Door)} with connections refused. */
    boolean down(String why) {
        return down(why, Door.REFUSED);
    }

    /** Shuts the door (see {@link Door}) and resets every open connection; false when it was already down. */
    boolean down(String why, Door door) {
        java.util.concurrent.Future<?> stopped;
        long since;
        synchronized (this) {
            if (closed || downSince >= 0) {
                return false;
            }
            since = System.currentTimeMillis();
            downSince = since;
            downWhy = why;
            downDoor = door;
            closeQuietly(listener);
            stopped = accepting;
        }
        // The JDK closes a listening socket that a thread is blocked accepting on only once that thread has
        // left accept(); until then the kernel still completes new connections. Down means refused now.
        awaitQuietly(stopped);
        if (door == Door.TIMED_OUT) {
            shutTimingOut(since);
        }
        open.forEach(pipe -> pipe.end(true));
        return true;
    }

    /**
     * Listens on the port again but never accepts, and fills the accept queue with connections of
     * its own until one cannot complete: from then on the kernel drops every SYN to the port. Only
     * for the window that started at {@code since}: one that ended meanwhile is left alone. Where
     * the queue cannot be filled (a kernel that answers instead of dropping), the door stays shut as
     * refused, and the window says so.
     */
    private synchronized void shutTimingOut(long since) {
        if (closed || downSince != since) {
            return;
        }
        try {
            // The smallest queue the JDK passes on (0 means "the default", 50): two connections fill it on Linux.
            blackHole = bind(port, 1);
            InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
            while (fillers.size() < MOST_FILLERS) {
                Socket filler = new Socket();
                try {
                    filler.connect(address, FILLER_CONNECT_MILLIS);
                    fillers.add(filler);
                } catch (SocketTimeoutException e) {
                    // The queue is full, which is the point.
                    closeQuietly(filler);
                    return;
                } catch (IOException e) {
                    closeQuietly(filler);
                    break;
                }
            }
        } catch (IOException e) {
            // Not bound: below, the door is shut as refused.
        }
        openTimingOut();
        downDoor = Door.REFUSED;
    }

    /** Opens the door shut by a timed-out window: its queued connections are reset with the listener. */
    private void openTimingOut() {
        fillers.forEach(FaultProxy::reset);
        fillers.clear();
        closeQuietly(blackHole);
        blackHole = null;
    }

    private static void awaitQuietly(java.util.concurrent.Future<?> task) {
        if (task == null) {
            return;
        }
        try {
            task.get(2, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            // The accept loop is gone or stuck; the listener is closed either way.
        }
    }

    /** Listens again on the same port; a no-op when it is up or closed. */
    void up() {
        synchronized (this) {
            if (closed || downSince < 0) {
                return;
            }
            openTimingOut();
            try {
                listener = bind(port, 200);
            } catch (IOException e) {
                throw new IllegalStateException("the fault proxy could not listen again on " + port + ": " + e.getMessage(), e);
            }
            windows.add(new Window(downSince, System.currentTimeMillis(), downWhy, downDoor));
            downSince = -1;
            listen(listener);
        }
    }

    /** Down for {@code length}, then up again; returns at once, false when a window was already open. */
    boolean unreachableFor(Duration length, String why, Door door) {
        if (!down(why, door)) {
            return false;
        }
        threads.submit(() -> {
            try {
                Thread.sleep(length);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                up();
            }
        });
        return true;
    }

    synchronized List<Window> windows() {
        return List.copyOf(windows);
    }

    long overflows() {
        return overflows.get();
    }

    long upstreamResets() {
        return upstreamResets.get();
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            closeQuietly(listener);
            openTimingOut();
            if (downSince >= 0) {
                windows.add(new Window(downSince, System.currentTimeMillis(), downWhy, downDoor));
                downSince = -1;
            }
        }
        open.forEach(pipe -> pipe.end(true));
        threads.shutdownNow();
        try {
            threads.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Binds with SO_REUSEADDR; a port a moment ago ours may still be settling, so rebinding is retried briefly. */
    private static ServerSocket bind(int port, int backlog) throws IOException {
        long until = System.nanoTime() + REBIND_WAIT.toNanos();
        while (true) {
            ServerSocket socket = new ServerSocket();
            socket.setReuseAddress(true);
            try {
                socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), backlog);
                return socket;
            } catch (BindException e) {
                socket.close();
                if (System.nanoTime() > until) {
                    throw e;
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while binding", interrupted);
                }
            }
        }
    }

    private void listen(ServerSocket socket) {
        accepting = threads.submit(() -> {
            while (!socket.isClosed()) {
                Socket client;
                try {
                    client = socket.accept();
                } catch (IOException e) {
                    return; // closed by down() or close()
                }
                if (socket.isClosed()) {
                    // Completed by the kernel while down() was closing the listener: refused after all.
                    reset(client);
                    return;
                }
                if (!slots.tryAcquire()) {
                    overflows.incrementAndGet();
                    reset(client);
                    continue;
                }
                Pipe pipe = new Pipe(client);
                open.add(pipe);
                threads.submit(pipe::connect);
            }
        });
    }

    /** One proxied connection: lastseat's socket, WireMock's socket, a pump each way. */
    private final class Pipe {
        private final Socket client;
        private volatile Socket server;
        private final AtomicBoolean ended = new AtomicBoolean();
        private final AtomicInteger pumping = new AtomicInteger(2);
        /** The request line lastseat sent last on this connection (HTTP/1.1: one request at a time). */
        private volatile String request = "";
        /** lastseat closed its side: it no longer waits for an answer. */
        private volatile boolean clientDone;

        Pipe(Socket client) {
            this.client = client;
        }

        void connect() {
            synchronized (FaultProxy.this) {
                // Accepted just before a window began: it is cut like every other open connection.
                if (downSince >= 0 || closed) {
                    end(true);
                    return;
                }
            }
            try {
                Socket s = new Socket();
                s.connect(upstream, 1000);
                s.setTcpNoDelay(true);
                client.setTcpNoDelay(true);
                server = s;
                if (ended.get()) {
                    reset(s);
                    return;
                }
                threads.submit(() -> pump(client, s, false));
                pump(s, client, true);
            } catch (IOException e) {
                end(true);
            }
        }

        private void pump(Socket from, Socket to, boolean fromUpstream) {
            byte[] buffer = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                while (true) {
                    int n;
                    try {
                        n = in.read(buffer);
                    } catch (IOException e) {
                        // WireMock's reset is a failed read from WireMock while lastseat still waits for the answer;
                        // a failed write, or a read after lastseat hung up, is lastseat having gone.
                        if (fromUpstream && !ended.get() && !clientDone) {
                            upstreamReset();
                        }
                        throw e;
                    }
                    if (n < 0) {
                        break;
                    }
                    if (!fromUpstream) {
                        noteRequestLine(buffer, n);
                    }
                    out.write(buffer, 0, n);
                }
                if (!fromUpstream) {
                    clientDone = true;
                }
                // A clean end of one direction is passed on as one; the pipe ends when both have.
                to.shutdownOutput();
                if (pumping.decrementAndGet() == 0) {
                    end(false);
                }
            } catch (IOException e) {
                end(true);
            }
        }

        /** A chunk that starts a request ("POST /payments HTTP/1.1") names it; a body's later chunks do not. */
        private void noteRequestLine(byte[] bytes, int n) {
            int end = 0;
            while (end < Math.min(n, 200) && bytes[end] != '\r') {
                end++;
            }
            String line = new String(bytes, 0, end, StandardCharsets.ISO_8859_1);
            if (REQUEST_LINE.matcher(line).matches()) {
                request = line;
            }
        }

        /** WireMock cut this connection: perhaps go down first, so lastseat's retry finds the door shut. */
        private void upstreamReset() {
            upstreamResets.incrementAndGet();
            Outage outage = afterUpstreamReset.apply(request);
            if (outage.millis() > 0) {
                unreachableFor(Duration.ofMillis(outage.millis()), "after a reset", outage.door());
            }
        }

        void end(boolean reset) {
            if (!ended.compareAndSet(false, true)) {
                return;
            }
            if (reset) {
                reset(client);
                Socket s = server;
                if (s != null) {
                    reset(s);
                }
            } else {
                closeQuietly(client);
                closeQuietly(server);
            }
            open.remove(this);
            slots.release();
        }
    }

    /** Closes with SO_LINGER 0: the peer gets a RST, not a FIN. */
    private static void reset(Socket socket) {
        try {
            socket.setSoLinger(true, 0);
        } catch (IOException ignored) {
            // already closed: nothing left to reset
        }
        closeQuietly(socket);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception ignored) {
            // closing is all that is wanted; a failure to close leaves nothing to do
        }
    }
}

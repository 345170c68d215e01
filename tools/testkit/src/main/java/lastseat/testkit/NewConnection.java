package lastseat.testkit;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One HTTP/1.1 exchange on a TCP connection of its own: opened when called, {@code Connection: close}
 * asked for, closed once the answer has been read. A buyer who arrives from a machine of its own, as
 * bin/bench's bursts need, for the price of one socket.
 *
 * <p>Why not the JDK client, one per buyer, as {@link LastseatClient} can be made: each one starts a
 * selector thread and runs every exchange through its asynchronous machinery. Three hundred of them,
 * on the same two cores as the servers they measure, took more CPU in a burst than either lastseat
 * instance did (BENCHMARKS, "The burst's load generator"). Real buyers' clients do not run on the
 * server's cores; this one costs little there.
 *
 * <p>Contract: as {@link Http#send}: a failed exchange (refused, reset, timed out, an answer that is not
 * HTTP/1.x) is an {@link UncheckedIOException}; an interrupt is an {@link IllegalStateException} with
 * the thread's interrupt flag set again. {@code timeout} bounds the connect and every read, and the
 * whole exchange: an answer still arriving then is a timeout.
 *
 * <p>Hazard: only what lastseat's answers need is read: a status line, headers, and a body by
 * {@code Content-Length}, chunked, or up to the close. No TLS, no redirects, no {@code 100 Continue}.
 */
public final class NewConnection {
    private static final int MAX_HEAD_BYTES = 64 * 1024;

    private NewConnection() {
    }

    /** {@code method path} at {@code base} (http, a host and a port) with these headers and body; null body for none. */
    public static Answer exchange(URI base, String method, String path, Map<String, String> headers, byte[] body, Duration timeout) {
        long start = System.nanoTime();
        long until = start + timeout.toNanos();
        try (Socket socket = new Socket()) {
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress(base.getHost(), base.getPort()), Math.toIntExact(Math.max(1, timeout.toMillis())));
            OutputStream out = socket.getOutputStream();
            out.write(head(base, method, path, headers, body));
            if (body != null) {
                out.write(body);
            }
            out.flush();
            Reader in = new Reader(socket, until);
            int status = status(in.line());
            Map<String, List<String>> answerHeaders = new LinkedHashMap<>();
            for (String line = in.line(); !line.isEmpty(); line = in.line()) {
                int colon = line.indexOf(':');
                if (colon <= 0) {
                    throw new IOException("not an HTTP header line: " + line);
                }
                answerHeaders.computeIfAbsent(line.substring(0, colon).trim(), name -> new ArrayList<>())
                        .add(line.substring(colon + 1).trim());
            }
            byte[] answerBody = method.equals("HEAD") || status == 204 || status == 304 ? new byte[0] : in.body(answerHeaders);
            return new Answer(status, answerHeaders, answerBody, (System.nanoTime() - start) / 1_000_000);
        } catch (IOException e) {
            if (Thread.currentThread().isInterrupted()) {
                throw new IllegalStateException("interrupted", e);
            }
            throw new UncheckedIOException(method + " " + base.resolve(path) + " failed: " + e.getMessage(), e);
        }
    }

    private static byte[] head(URI base, String method, String path, Map<String, String> headers, byte[] body) {
        StringBuilder head = new StringBuilder(256).append(method).append(' ').append(path).append(" HTTP/1.1\r\n")
                .append("Host: ").append(base.getHost()).append(':').append(base.getPort()).append("\r\n");
        headers.forEach((name, value) -> head.append(name).append(": ").append(value).append("\r\n"));
        if (body != null) {
            head.append("Content-Length: ").append(body.length).append("\r\n");
        }
        return head.append("Connection: close\r\n\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    private static int status(String line) throws IOException {
        String[] parts = line.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP/1.x status line: " + line);
        }
        try {
            return Integer.parseInt(parts[1]);
        } catch (NumberFormatException e) {
            throw new IOException("not an HTTP/1.x status line: " + line, e);
        }
    }

    /** The answer's bytes, each read bounded by what is left of the exchange's time. */
    private static final class Reader {
        private final Socket socket;
        private final InputStream in;
        private final long until;
        private final byte[] buffer = new byte[8192];
        private int next;
        private int end;
        private int headBytes;

        Reader(Socket socket, long until) throws IOException {
            this.socket = socket;
            this.in = socket.getInputStream();
            this.until = until;
        }

        /** One byte, or -1 at the end of the stream. */
        private int read() throws IOException {
            if (next == end) {
                long left = (until - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    throw new SocketTimeoutException("the answer did not come in time");
                }
                socket.setSoTimeout(Math.toIntExact(Math.min(Integer.MAX_VALUE, left)));
                end = in.read(buffer);
                next = 0;
                if (end <= 0) {
                    end = 0;
                    return -1;
                }
            }
            return buffer[next++] & 0xff;
        }

        /** A line of the head without its CRLF. */
        String line() throws IOException {
            StringBuilder line = new StringBuilder(64);
            for (int b = read(); b != '\n'; b = read()) {
                if (b < 0) {
                    throw new EOFException("the connection closed in the answer's head");
                }
                if (++headBytes > MAX_HEAD_BYTES) {
                    throw new IOException("an answer's head longer than " + MAX_HEAD_BYTES + " bytes");
                }
                if (b != '\r') {
                    line.append((char) b);
                }
            }
            return line.toString();
        }

        byte[] body(Map<String, List<String>> headers) throws IOException {
            String encoding = Answer.header(headers, "Transfer-Encoding");
            if (encoding != null && encoding.toLowerCase(Locale.ROOT).contains("chunked")) {
                ByteArrayOutputStream body = new ByteArrayOutputStream();
                for (int size = chunkSize(line()); size > 0; size = chunkSize(line())) {
                    copy(size, body);
                    line();
                }
                for (String trailer = line(); !trailer.isEmpty(); trailer = line()) {
                    // Trailers are not part of any answer lastseat gives.
                }
                return body.toByteArray();
            }
            String length = Answer.header(headers, "Content-Length");
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            if (length != null) {
                copy(contentLength(length), body);
            } else {
                for (int b = read(); b >= 0; b = read()) {
                    body.write(b);
                }
            }
            return body.toByteArray();
        }

        private void copy(int n, ByteArrayOutputStream to) throws IOException {
            for (int i = 0; i < n; i++) {
                int b = read();
                if (b < 0) {
                    throw new EOFException("the connection closed " + (n - i) + " bytes before the answer's end");
                }
                to.write(b);
            }
        }

        private static int contentLength(String value) throws IOException {
            try {
                return Integer.parseInt(value.trim());
            } catch (NumberFormatException e) {
                throw new IOException("not a Content-Length: " + value, e);
            }
        }

        private static int chunkSize(String line) throws IOException {
            try {
                int semicolon = line.indexOf(';');
                return Integer.parseInt((semicolon < 0 ? line : line.substring(0, semicolon)).trim(), 16);
            } catch (NumberFormatException e) {
                throw new IOException("not a chunk size: " + line, e);
            }
        }
    }
}

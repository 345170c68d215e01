package lastseat.web;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;

/** Reads a request body, refusing with 413 as soon as it is longer than the limit. */
public final class Bodies {
    private Bodies() {
    }

    public static byte[] read(ServerRequest request, int maxBytes) {
        long declared = request.headers().contentLength().orElse(-1L);
        if (declared > maxBytes) {
            throw tooLarge(maxBytes);
        }
        if (!request.content().hasEntity()) {
            return new byte[0];
        }
        try (InputStream in = request.content().inputStream()) {
            byte[] body = in.readNBytes(maxBytes + 1);
            if (body.length > maxBytes) {
                throw tooLarge(maxBytes);
            }
            return body;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static void requireJson(ServerRequest request) {
        request.headers().first(HeaderNames.CONTENT_TYPE).ifPresent(type -> {
            if (!type.toLowerCase().startsWith("application/json")) {
                throw new Problem(415, "unsupported-media-type", "Unsupported media type",
                                  "Send the body as application/json, not " + type);
            }
        });
    }

    private static Problem tooLarge(int maxBytes) {
        return new Problem(413, "body-too-large", "Payload too large",
                           "The request body is larger than " + maxBytes + " bytes",
                           Map.of("maxBytes", maxBytes));
    }
}

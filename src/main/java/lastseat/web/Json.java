package lastseat.web;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.exc.StreamReadException;
import com.fasterxml.jackson.core.util.BufferRecycler;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import com.fasterxml.jackson.core.util.RecyclerPool;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;

/**
 * Strict JSON both ways. Reading refuses unknown fields, a field given twice, trailing content, whole
 * numbers given as strings or fractions, text given as a number or a boolean, and deep nesting, long
 * strings and long numbers (money may be a decimal string: {@code "40.00"}), and turns every refusal
 * into a 400 problem that says what is wrong and where, in words of its own.
 *
 * <p>Hazard: the JSON library's messages name our classes and its own settings ("Cannot deserialize
 * value of type `java.lang.Integer`…"); they go to the log (at FINE: bad input is the client's), never
 * into the problem. A field name is repeated only when it is a plain name (letters, digits, '_'), so the
 * detail never carries what a client smuggled into a key.
 */
public final class Json {
    private static final Logger LOG = Logger.getLogger(Json.class.getName());
    /** The limits of {@link StreamReadConstraints} below, as the refusal states them. */
    private static final int MAX_DEPTH = 32;
    private static final int MAX_STRING = 10_000;
    private static final int MAX_NUMBER = 40;
    private static final Pattern PLAIN_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,39}");

    /**
     * Jackson's default keeps a set of its buffers (about 11 KB) in a thread-local of every thread that
     * parsed or wrote JSON, for as long as that thread lives. Every connection and every purchase here is
     * a virtual thread of its own, so that was 11 KB held per keep-alive connection and per purchase in
     * flight. A shared pool lends a set to each parse or write and takes it back at its end (JSON work is
     * short and never waits on I/O: it reads and writes byte arrays); a parse that finds none makes one,
     * and the pool keeps at most {@value #KEPT_BUFFER_SETS}. A set keeps the largest buffers it has lent
     * (its char buffers only up to {@link #MAX_STRING}: {@link Buffers}), so one that wrote a large answer
     * (a seat map of thousands) holds more than 11 KB.
     */
    private static final int KEPT_BUFFER_SETS = 64;

    /**
     * A set of Jackson's buffers that keeps no char buffer longer than {@link #MAX_STRING}. Jackson
     * checks a string's length against the limit only when the string overflows its buffer (or is made
     * a {@code String}): a kept buffer longer than the limit would take a longer string whole, unchecked.
     * Seen with the shared pool: a 12,000-character value of an unknown field was refused as an unknown
     * field or as over the limit, depending on which set a request drew (FuzzTest).
     */
    private static final class Buffers extends BufferRecycler {
        @Override
        public void releaseCharBuffer(int index, char[] buffer) {
            if (buffer.length <= MAX_STRING) {
                super.releaseCharBuffer(index, buffer);
            }
        }
    }

    /** The shared pool of {@link Buffers}: at most {@link #KEPT_BUFFER_SETS} kept. */
    private static final class BufferPool extends JsonRecyclerPools.BoundedPool {
        BufferPool() {
            super(KEPT_BUFFER_SETS);
        }

        @Override
        public BufferRecycler createPooled() {
            return new Buffers();
        }
    }

    private static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
                    .recyclerPool(new BufferPool()).build())
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
            .withCoercionConfig(LogicalType.Integer, c -> c.setCoercion(CoercionInputShape.String, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Float, CoercionAction.Fail))
            // A name or a label given as a number or a boolean is a client's mistake, not text to guess.
            .withCoercionConfig(LogicalType.Textual, c -> c.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail))
            .build();

    static {
        MAPPER.getFactory().setStreamReadConstraints(StreamReadConstraints.builder()
                .maxNestingDepth(MAX_DEPTH).maxStringLength(MAX_STRING).maxNumberLength(MAX_NUMBER).build());
    }

    /**
     * What reads a client's body: a field given twice is refused, because which of the two counts is a
     * choice each reader makes its own way (a body must mean one thing to every reader of it).
     */
    private static final ObjectReader BODIES = MAPPER.reader().with(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private Json() {
    }

    /** The pool the buffers come from: for a test that leaves in it what other requests would have. */
    static RecyclerPool<BufferRecycler> bufferPool() {
        return MAPPER.getFactory()._getRecyclerPool();
    }

    public static <T> T read(byte[] body, Class<T> type) {
        if (body.length == 0) {
            throw Problem.badRequest("malformed-json", "The request body is empty; a JSON object is expected");
        }
        try (JsonParser parser = BODIES.createParser(body)) {
            T value = BODIES.forType(type).readValue(parser);
            if (value == null) {
                throw Problem.badRequest("malformed-json", "The request body is JSON null; a JSON object is expected");
            }
            if (parser.nextToken() != null) {
                throw Problem.badRequest("malformed-json", "The request body goes on after its JSON object; send exactly one");
            }
            return value;
        } catch (JsonProcessingException e) {
            LOG.log(Level.FINE, "refused a request body as " + type.getSimpleName(), e);
            throw refusal(e);
        } catch (IOException e) {
            LOG.log(Level.FINE, "could not read a request body as " + type.getSimpleName(), e);
            throw Problem.badRequest("malformed-json", "The request body could not be read as JSON");
        }
    }

    /** The problem for a refused body, in our words: what is wrong, and where when that can be said safely. */
    private static Problem refusal(JsonProcessingException e) {
        String field = e instanceof JsonMappingException mapping ? field(mapping) : null;
        // A limit, a bad number or broken JSON met while binding a field comes wrapped; the field is the wrapper's.
        JsonProcessingException found = e.getClass() == JsonMappingException.class && e.getCause() instanceof JsonProcessingException inner
                ? inner : e;
        String at = field == null ? "" : " at " + field;
        return switch (found) {
            case UnrecognizedPropertyException unknown -> Problem.badRequest("unknown-field", field == null
                    ? "The request body has a field that is not known" : "Unknown field '" + field + "'");
            case StreamConstraintsException limit -> malformed("The request body is over a limit" + at + ": at most " + MAX_DEPTH
                    + " levels of nesting, strings of at most " + MAX_STRING + " characters and numbers of at most "
                    + MAX_NUMBER + " digits");
            case MismatchedInputException mismatch when field == null -> malformed("The request body must be a JSON object");
            case MismatchedInputException mismatch -> malformed(field + " must be " + expected(mismatch.getTargetType()));
            case InputCoercionException range -> malformed(field == null ? "A number in the request body is out of range" + at(range)
                                                                         : field + " is out of range");
            // The parser says so only in its message; the words are the library's, the check is ours.
            case JsonParseException parse when String.valueOf(parse.getOriginalMessage()).startsWith("Duplicate field") ->
                    malformed("A field is given twice in the request body" + at(parse));
            case StreamReadException read -> malformed("The request body is not valid JSON" + at + at(read));
            default -> malformed("The request body is not the JSON expected" + at);
        };
    }

    private static Problem malformed(String detail) {
        return Problem.badRequest("malformed-json", detail);
    }

    /** The field as a client writes it ({@code buyer.id}, {@code seats[2]}); null at the top, or when a name is not plain. */
    private static String field(JsonMappingException e) {
        StringBuilder path = new StringBuilder();
        for (JsonMappingException.Reference reference : e.getPath()) {
            if (reference.getFieldName() != null) {
                if (!PLAIN_NAME.matcher(reference.getFieldName()).matches()) {
                    return null;
                }
                path.append(path.isEmpty() ? "" : ".").append(reference.getFieldName());
            } else if (reference.getIndex() >= 0) {
                path.append('[').append(reference.getIndex()).append(']');
            }
        }
        return path.isEmpty() || path.charAt(0) == '[' ? null : path.toString();
    }

    private static String expected(Class<?> type) {
        if (type == null) {
            return "of another type";
        }
        if (type == Integer.class || type == int.class || type == Long.class || type == long.class) {
            return "a whole number";
        }
        if (type == String.class) {
            return "a string";
        }
        if (type == BigDecimal.class || Number.class.isAssignableFrom(type)) {
            return "a number or a decimal string such as \"40.00\"";
        }
        if (type == Boolean.class || type == boolean.class) {
            return "true or false";
        }
        if (Collection.class.isAssignableFrom(type) || type.isArray()) {
            return "a list";
        }
        return "a JSON object";
    }

    private static String at(StreamReadException e) {
        var location = e.getLocation();
        return location == null || location.getLineNr() < 1 ? ""
                : " (line " + location.getLineNr() + ", column " + location.getColumnNr() + ")";
    }

    public static JsonNode tree(String body) throws JsonProcessingException {
        return MAPPER.readTree(body);
    }

    public static byte[] bytes(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write " + value.getClass().getSimpleName() + " as JSON", e);
        }
    }

    public static String text(Object value) {
        return new String(bytes(value), StandardCharsets.UTF_8);
    }
}

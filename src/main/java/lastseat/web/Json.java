package lastseat.web;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Strict JSON both ways. Reading refuses unknown fields, trailing content, whole numbers given as
 * strings or fractions, text given as a number or a boolean, and deep nesting (money may be a decimal
 * string: {@code "40.00"}), and
 * turns every refusal into a 400 problem that says where it is.
 */
public final class Json {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
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
                .maxNestingDepth(32).maxStringLength(10_000).maxNumberLength(40).build());
    }

    private Json() {
    }

    public static <T> T read(byte[] body, Class<T> type) {
        if (body.length == 0) {
            throw Problem.badRequest("malformed-json", "The request body is empty; a JSON object is expected");
        }
        try {
            T value = MAPPER.readValue(body, type);
            if (value == null) {
                throw Problem.badRequest("malformed-json", "The request body is JSON null; a JSON object is expected");
            }
            return value;
        } catch (UnrecognizedPropertyException e) {
            throw Problem.badRequest("unknown-field", "Unknown field '" + e.getPropertyName() + "'");
        } catch (JsonProcessingException e) {
            throw Problem.badRequest("malformed-json", "The request body is not the JSON expected: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw Problem.badRequest("malformed-json", "The request body could not be read: " + e.getMessage());
        }
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

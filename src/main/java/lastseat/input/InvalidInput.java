package lastseat.input;

/**
 * Input that a rule of the domain refuses (a seat label, an event's field, a text with a control
 * character), before anything was read or written: the message says what is wrong, in words written
 * for whoever sent it. Domain code throws this, never an HTTP type; the web edge's one mapper
 * ({@code lastseat.web.Edge}) answers it 400 {@code invalid-field}.
 *
 * <p>Hazard: the message reaches the client as the problem's detail. Build it from the rule and the
 * field's name only; never repeat the value, nor any exception's or library's text.
 */
public final class InvalidInput extends RuntimeException {
    public InvalidInput(String detail) {
        // A refusal of input, not a fault: no stack to fill, none to log.
        super(detail, null, false, false);
    }
}

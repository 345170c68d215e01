package lastseat.web;

import lastseat.input.InvalidInput;

/**
 * The one rule for text a client sends, applied to every text field of {@code POST /purchases} and
 * {@code POST /events} before anything is read or written: no control character (U+0000–U+001F,
 * U+007F–U+009F, NUL included), no unpaired surrogate (text that is not valid Unicode), and no more
 * than the field's length. A field's own format (an email, a seat label) is checked after this. Text an
 * outside service gives for the buyer (a decline's reason) is {@link #cleaned} to the same rule.
 *
 * <p>Contract: {@link #checked} returns the value unchanged, or throws {@link InvalidInput} (which the
 * edge answers 400 {@code invalid-field}) naming the field and the fault, never repeating the value; it
 * speaks no HTTP, so the domain's own rules (seat labels, an event's fields) build on it. Length is counted in UTF-16
 * units ({@link String#length()}), never fewer than the characters either database counts, so a value
 * that passes fits its column on both.
 *
 * <p>Hazard: the two databases disagree on such text. PostgreSQL refuses a NUL in a string with an
 * error (which surfaced as 500 {@code internal}) where H2 stores it, and an unpaired surrogate reaches
 * PostgreSQL as '?' but H2 as itself. A text field that bypasses this class gets a different answer,
 * or a different row, on each.
 */
public final class Text {
    private Text() {
    }

    /**
     * {@code value} once it is storable text of at most {@code maxLength} UTF-16 units; null stays null
     * (whether a field is required is its caller's rule). {@code field} names it as the client wrote it
     * ({@code buyer.email}, {@code seats[2]}).
     */
    public static String checked(String field, String value, int maxLength) {
        if (value == null) {
            return null;
        }
        String fault = fault(value, maxLength);
        if (fault != null) {
            throw new InvalidInput(field + " " + fault);
        }
        return value;
    }

    /** Whether {@code value} passes {@link #checked}: for ids in a path, where a value that cannot be stored cannot exist. */
    public static boolean storable(String value, int maxLength) {
        return value != null && fault(value, maxLength) == null;
    }

    /**
     * Text from an outside service that is shown to the buyer and stored (a fraud or payment decline's
     * reason), fit for both: control characters and unpaired surrogates dropped, cut to {@code maxLength};
     * null stays null, and so does text with nothing left.
     */
    public static String cleaned(String value, int maxLength) {
        if (value == null) {
            return null;
        }
        StringBuilder kept = new StringBuilder();
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                if (kept.length() + 2 > maxLength) {
                    break;
                }
                kept.append(c).append(value.charAt(++i));
            } else if (!Character.isISOControl(c) && !Character.isSurrogate(c)) {
                if (kept.length() + 1 > maxLength) {
                    break;
                }
                kept.append(c);
            }
        }
        String text = kept.toString().strip();
        return text.isEmpty() ? null : text;
    }

    /** What is wrong with {@code value}, as the end of a sentence that starts with the field's name; null when nothing is. */
    private static String fault(String value, int maxLength) {
        if (value.length() > maxLength) {
            return "must be at most " + maxLength + " characters long";
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c)) {
                return "must not contain control characters (such as NUL, tab or line breaks)";
            }
            if (Character.isHighSurrogate(c) && i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return "is not valid Unicode text (it has an unpaired surrogate)";
            }
        }
        return null;
    }
}

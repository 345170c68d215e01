package lastseat.inventory;

import lastseat.input.InvalidInput;
import lastseat.web.Text;

import java.util.HashSet;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The one rule for seat labels, used where an event names its seats and where a purchase picks them:
 * 1-16 letters, digits, '_' or '-', starting with a letter or digit, no label twice. Labels are
 * compared exactly, so "a1" and "A1" are two seats.
 */
public final class SeatLabels {
    private static final Pattern LABEL = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,15}");

    private SeatLabels() {
    }

    /** {@code labels} as an unmodifiable list once checked; else {@link InvalidInput} names the first fault. */
    public static List<String> checked(List<String> labels, int max) {
        if (labels.isEmpty() || labels.size() > max) {
            throw new InvalidInput("seats must list from 1 to " + max + " seat labels");
        }
        var seen = new HashSet<String>();
        for (int i = 0; i < labels.size(); i++) {
            String label = Text.checked("seats[" + i + "]", labels.get(i), 16);
            if (label == null || !LABEL.matcher(label).matches()) {
                throw new InvalidInput("seat labels are 1-16 letters, digits, '_' or '-', starting with a letter or digit");
            }
            if (!seen.add(label)) {
                throw new InvalidInput("seat " + label + " is listed twice");
            }
        }
        return List.copyOf(labels);
    }
}

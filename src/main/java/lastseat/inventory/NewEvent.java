package lastseat.inventory;

import lastseat.input.InvalidInput;
import lastseat.web.Text;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The body of {@code POST /events}: named seats, or a capacity whose seats are named 1..capacity. Every
 * text field passes {@link Text} (no control characters, valid Unicode, its column's length) before its
 * own format.
 */
public record NewEvent(String id, String name, List<String> seats, Integer capacity, BigDecimal price, String currency) {
    private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");
    private static final Pattern CURRENCY = Pattern.compile("[A-Z]{3}");

    /** An event whose every field was checked: what {@link Inventory#create} takes. */
    public record Valid(String id, String name, List<String> labels, BigDecimal price, String currency) {
    }

    /** This event, checked; else {@link InvalidInput} names the first bad field (the edge answers it 400). */
    public Valid valid(int maxCapacity) {
        return new Valid(id, name, validSeats(maxCapacity), price, currency);
    }

    /** The seat labels in order, after checking every field; else {@link InvalidInput} names the first bad one. */
    private List<String> validSeats(int maxCapacity) {
        if (Text.checked("id", id, 64) != null && !ID.matcher(id).matches()) {
            throw new InvalidInput("id must be 1-64 lowercase letters, digits or '-'");
        }
        if (Text.checked("name", name, 200) == null || name.isBlank()) {
            throw new InvalidInput("name is required (1-200 characters)");
        }
        if (price == null || price.signum() < 0 || price.scale() > 2 || price.compareTo(new BigDecimal("1000000")) >= 0) {
            throw new InvalidInput("price must be a decimal string or number from 0 to 999999.99 with at most 2 decimals");
        }
        if (Text.checked("currency", currency, 3) == null || !CURRENCY.matcher(currency).matches()) {
            throw new InvalidInput("currency must be three capital letters (ISO 4217), e.g. EUR");
        }
        if ((seats == null) == (capacity == null)) {
            throw new InvalidInput("give either seats (a list of labels) or capacity (a number), not both");
        }
        if (capacity != null) {
            if (capacity < 1 || capacity > maxCapacity) {
                throw new InvalidInput("capacity must be from 1 to " + maxCapacity);
            }
            List<String> labels = new ArrayList<>(capacity);
            for (int i = 1; i <= capacity; i++) {
                labels.add(Integer.toString(i));
            }
            return labels;
        }
        return SeatLabels.checked(seats, maxCapacity);
    }
}

package lastseat.inventory;

import lastseat.web.Problem;

import java.util.List;
import java.util.Map;

/** 409: some requested seats are held or sold by somebody else; nothing was claimed. */
public final class SeatsTaken extends Problem {
    SeatsTaken(List<String> seats) {
        super(409, "seats-taken", "Seats taken", describe(seats), Map.of("seats", List.copyOf(seats)), null, null);
    }

    private static String describe(List<String> seats) {
        return seats.size() == 1
                ? seats.getFirst() + " is already taken"
                : String.join(", ", seats) + " are already taken";
    }
}

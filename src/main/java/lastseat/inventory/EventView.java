package lastseat.inventory;

import java.util.List;

/** An event's inventory at one moment: available + held + sold = capacity (I2). */
public record EventView(String id, String name, int capacity, int available, int held, int sold,
                        String price, String currency, List<SeatView> seats) {

    public record SeatView(String seat, String state) {
    }
}

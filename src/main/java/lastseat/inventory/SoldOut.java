package lastseat.inventory;

import lastseat.web.Problem;

import java.util.List;
import java.util.Map;

/** 409: fewer seats are free than the quantity asked for; nothing was claimed. */
public final class SoldOut extends Problem {
    SoldOut(int asked, int available) {
        super(409, "sold-out", "Sold out",
              available == 0 ? "The event is sold out" : "Only " + available + " seats are free, " + asked + " were asked for",
              Map.of("seats", List.of(), "available", available), null, null);
    }
}

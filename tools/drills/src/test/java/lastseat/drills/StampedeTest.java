package lastseat.drills;

import lastseat.inventory.Inventory;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The stampede's two booking steps under one race: the unsafe one (the service's claim with its guard
 * taken out) must double-book, or the race did not happen and the safe run would prove nothing; the
 * safe one (the service's own reservation) must sell each seat once under the same race.
 */
class StampedeTest {
    private static final int BUYERS = 200;

    @Test
    void theUnsafeArmRunsTheServicesOwnClaimWithOnlyItsGuardTakenOut() {
        String unguarded = Stampede.unguardedClaim();

        assertThat(unguarded + Inventory.SEAT_CLAIM_GUARD).isEqualTo(Inventory.SEAT_CLAIM);
        assertThat(unguarded).doesNotContain("AVAILABLE");
    }

    @Test
    void unsafeBookingTellsManyBuyersTheyHaveTheOneSeat() throws InterruptedException {
        Stampede.Report report = Stampede.run(Stampede.Mode.UNSAFE, BUYERS, 1);

        assertThat(report.doubleCount()).as("the race happened").isEqualTo(1);
        Stampede.SeatReport seat = report.perSeat().get("A1");
        assertThat(seat.toldYes()).hasSizeGreaterThan(1).hasSize(report.confirmed());
        assertThat(seat.toldYes()).as("the seat's final owner is one of those told yes; the others were lied to").contains(seat.owner());
    }

    @Test
    void safeBookingSellsTheSeatOnceUnderTheSameRace() throws InterruptedException {
        Stampede.Report report = Stampede.run(Stampede.Mode.SAFE, BUYERS, 1);

        assertThat(report.doubleCount()).isZero();
        assertThat(report.confirmed()).isEqualTo(1);
        assertThat(report.refused()).isEqualTo(BUYERS - 1);
        Stampede.SeatReport seat = report.perSeat().get("A1");
        assertThat(seat.toldYes()).containsExactly(seat.owner());
        assertThat(report.answers()).filteredOn(a -> !a.confirmed()).hasSize(BUYERS - 1)
                .allSatisfy(a -> assertThat(a.message()).isEqualTo("A1 is already taken"));
    }

    @Test
    void severalSeatsAreEachSoldOnceSafelyAndEachDoubleBookedUnsafely() throws InterruptedException {
        Stampede.Report safe = Stampede.run(Stampede.Mode.SAFE, 60, 3);
        Stampede.Report unsafe = Stampede.run(Stampede.Mode.UNSAFE, 60, 3);

        assertThat(safe.confirmed()).isEqualTo(3);
        assertThat(safe.doubleCount()).isZero();
        assertThat(safe.perSeat().values()).allSatisfy(seat -> assertThat(seat.toldYes()).containsExactly(seat.owner()));
        assertThat(unsafe.doubleCount()).isEqualTo(3);
    }

    @Test
    void aStampedeWithoutARaceIsRefusedBeforeAnythingRuns() {
        assertThatThrownBy(() -> Stampede.run(Stampede.Mode.SAFE, 1, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("buyers must be from 2");
        assertThatThrownBy(() -> Stampede.run(Stampede.Mode.SAFE, 10, 10)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fewer than the buyers");
    }
}

package lastseat.db;

import java.security.SecureRandom;
import java.util.UUID;

/**
 * Ids for rows made by the thousand — purchases, tickets, outbox entries: UUIDs of RFC 9562's version 7,
 * the Unix time in milliseconds in the first 48 bits and 74 random bits after it, so that their text
 * sorts by the millisecond they were made in (within a process, and across instances whose clocks
 * agree).
 *
 * <p>Why: each such id is the key of an index (a primary key, and the foreign keys that name it), and
 * random keys put every insert into a random leaf of it. On the H2 file every commit rewrites the leaves
 * it changed into a new chunk, so random keys leave a live leaf or two of each index in nearly every
 * chunk, and a chunk is freed only once all its pages are dead: the file grew about three times the
 * size it does with ids made in order, whose inserts all go to the index's last leaves
 * (docs/BENCHMARKS.md, "Ids made in time order"). PostgreSQL's B-trees gain the same locality.
 *
 * <p>Hazard: an id tells when its row was made, to the millisecond, and is guessable but for its random
 * bits: never a secret. Who may read a purchase is decided by its client, not by its id; tokens
 * ({@code claim_token}) stay random. The clock is the wall clock, not the service's {@link java.time.Clock}:
 * an id's time is for the index's order only, and a clock set back only scatters the next inserts.
 */
public final class TimeOrderedId {
    private static final SecureRandom RANDOM = new SecureRandom();

    private TimeOrderedId() {
    }

    /** A new id, as {@link UUID#toString()} writes it. */
    public static String next() {
        byte[] random = new byte[10];
        RANDOM.nextBytes(random);
        long millis = System.currentTimeMillis();
        // 48 bits of time, the version (7), 12 random bits.
        long high = (millis & 0xFFFF_FFFF_FFFFL) << 16 | 0x7000L | (random[0] & 0x0FL) << 8 | random[1] & 0xFFL;
        // The variant (binary 10), 62 random bits.
        long low = 0;
        for (int i = 2; i < 10; i++) {
            low = low << 8 | random[i] & 0xFFL;
        }
        low = low & 0x3FFF_FFFF_FFFF_FFFFL | 0x8000_0000_0000_0000L;
        return new UUID(high, low).toString();
    }
}

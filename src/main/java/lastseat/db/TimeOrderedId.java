package lastseat.db;

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
    private TimeOrderedId() {
    }

    /** A new id, as {@link UUID#toString()} writes it. */
    public static String next() {
        // A version 4 UUID's random bits (from SecureRandom) and variant, with its first 48 bits the time and its version 7.
        UUID random = UUID.randomUUID();
        long high = (System.currentTimeMillis() & 0xFFFF_FFFF_FFFFL) << 16 | 0x7000L | random.getMostSignificantBits() & 0x0FFFL;
        return new UUID(high, random.getLeastSignificantBits()).toString();
    }
}

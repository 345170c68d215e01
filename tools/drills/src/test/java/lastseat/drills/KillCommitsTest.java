package lastseat.drills;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * kill -9 against a process committing to an H2 file from 8 threads ({@link KillCommits}): H2 2.5.252
 * alone, reusing space and freeing it at once, loses commits that had returned, so the campaign can see
 * a loss; with the service's settings (commits through the gate, space reused once the gate's
 * housekeeping frees it, half-applied commits finished at open) no kill loses one, and every row's table
 * entry and index entry agree. A failure names its seed.
 */
class KillCommitsTest {
    private static final long SEED = System.currentTimeMillis();

    @Test
    void h2AloneReusingSpaceLosesCommitsThatHadReturnedToAKill(@TempDir Path dir) throws Exception {
        List<KillCommits.Round> rounds = KillCommits.campaign(dir, SEED, KillCommits.UNSAFE_ROUNDS, KillCommits.UNSAFE, true, r -> { });

        assertThat(rounds).as("seed " + SEED + ": " + rounds).anyMatch(r -> r.lost() > 0);
        assertThat(ProcessHandle.current().children()).as("every writer was killed and reaped").isEmpty();
    }

    @Test
    void withTheServicesSettingsNoKillLosesACommit(@TempDir Path dir) throws Exception {
        List<KillCommits.Round> rounds = KillCommits.campaign(dir, SEED, 6, KillCommits.SAFE, false, r -> { });

        assertThat(rounds).hasSize(6);
        assertThat(rounds).as("seed " + SEED + ": " + rounds).allMatch(r -> r.lost() == 0);
        assertThat(rounds).as("every round committed before its kill, no writer thread died")
                .allMatch(r -> r.printed() > 0 && r.writerErrors().isEmpty());
        assertThat(ProcessHandle.current().children()).as("every writer was killed and reaped").isEmpty();
    }
}
